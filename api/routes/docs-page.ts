/**
 * A self-contained reference page: no CDN, so it works on an air-gapped instance. It renders the OpenAPI document
 * the server serves, grouped by tag, with each operation's access rule, parameters and schemas.
 */
export const docsPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>svc API reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2330;background:#fafbfc}
header{background:#1d2330;color:#fff;padding:16px 32px}header a{color:#9cc3ff}
main{max-width:980px;margin:0 auto;padding:16px 32px}
h2{margin-top:32px;border-bottom:1px solid #dde;padding-bottom:4px;text-transform:capitalize}
details{background:#fff;border:1px solid #dde;border-radius:6px;margin:8px 0;padding:8px 12px}
summary{cursor:pointer;font-family:ui-monospace,monospace}
.m{display:inline-block;min-width:64px;font-weight:700}.GET{color:#0a7}.POST{color:#07c}.PATCH{color:#b70}.PUT{color:#b70}.DELETE{color:#c33}
.acc{float:right;font-size:12px;color:#667}pre{background:#f3f4f7;padding:8px;overflow:auto;font-size:12px}
</style></head><body>
<header><strong>svc API reference</strong> &middot; <a href="/api/openapi.json">openapi.json</a> &middot; <a href="/api/openapi.yaml">openapi.yaml</a></header>
<main id="root">Loading&hellip;</main>
<script>
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
fetch('/api/openapi.json').then((r) => r.json()).then((doc) => {
  const byTag = {};
  for (const [path, ops] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(ops)) {
    (byTag[(op.tags && op.tags[0]) || 'other'] ??= []).push({ path, method: method.toUpperCase(), op });
  }
  const resolve = (s) => JSON.stringify(s, null, 2);
  let html = '<p>' + esc(doc.info.description || '') + '</p>';
  for (const [tag, list] of Object.entries(byTag).sort()) {
    html += '<h2>' + esc(tag) + '</h2>';
    for (const { path, method, op } of list) {
      const a = op['x-access'] || {};
      html += '<details><summary><span class="m ' + method + '">' + method + '</span>' + esc(path) + ' &mdash; ' + esc(op.summary || '') +
        '<span class="acc">' + esc(a.role) + (a.session ? ', session only' : '') + '</span></summary>' +
        (op.description ? '<p>' + esc(op.description) + '</p>' : '') +
        (op.parameters && op.parameters.length ? '<h4>Parameters</h4><pre>' + esc(resolve(op.parameters)) + '</pre>' : '') +
        (op.requestBody ? '<h4>Body</h4><pre>' + esc(resolve(op.requestBody.content['application/json'].schema)) + '</pre>' : '') +
        '<h4>Responses</h4><pre>' + esc(resolve(op.responses)) + '</pre></details>';
    }
  }
  html += '<h2>Schemas</h2>';
  for (const [name, s] of Object.entries(doc.components.schemas)) html += '<details id="' + esc(name) + '"><summary>' + esc(name) + '</summary><pre>' + esc(resolve(s)) + '</pre></details>';
  document.getElementById('root').innerHTML = html;
});
</script></body></html>
`;
