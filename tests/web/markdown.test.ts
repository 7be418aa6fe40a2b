import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createElement, type FunctionComponent } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import fc from 'fast-check';
import { createServer, type ViteDevServer } from 'vite';

/**
 * The run summary renderer (web/src/markdown.tsx) attacked with generated markdown: whatever a model or script
 * writes, the markup holds only the renderer's own tags, links only to http(s) and mailto, and no attribute that
 * runs code. Loaded through Vite, so the module under test is the one the app bundles.
 */
let vite: ViteDevServer;
let render: (source: string) => string;

before(async () => {
  vite = await createServer({
    configFile: new URL('../../web/vite.config.ts', import.meta.url).pathname,
    server: { middlewareMode: true, hmr: false, ws: false },
    appType: 'custom',
    logLevel: 'warn',
  });
  const mod = (await vite.ssrLoadModule('/src/markdown.tsx')) as { Markdown: FunctionComponent<{ source: string }> };
  render = (source) => renderToStaticMarkup(createElement(mod.Markdown, { source }));
});
after(async () => vite?.close());

const allowedTags = new Set([
  'div',
  'p',
  'br',
  'strong',
  'em',
  'code',
  'pre',
  'ul',
  'ol',
  'li',
  'blockquote',
  'hr',
  'h3',
  'h4',
  'h5',
  'h6',
  'a',
  'span',
]);
const allowedAttributes = new Set(['class', 'href', 'target', 'rel', 'title']);

function check(markup: string): void {
  for (const [, name, attrs] of markup.matchAll(/<([a-zA-Z0-9]+)([^>]*)>/g)) {
    assert.ok(allowedTags.has(name!), `tag <${name}> in ${markup}`);
    for (const [, attr, value] of attrs!.matchAll(/\s([^\s=]+)="([^"]*)"/g)) {
      assert.ok(allowedAttributes.has(attr!), `attribute ${attr} in ${markup}`);
      if (attr === 'href') assert.match(value!, /^(https?:\/\/|mailto:)/i, `href ${value}`);
    }
  }
}

const fragments = [
  '<script>alert(1)</script>',
  '<img src=x onerror=alert(1)>',
  '"><svg onload=alert(1)>',
  '<iframe src=//evil>',
  '<form action=//evil><input>',
  '[x](javascript:alert(1))',
  '[x](JaVaScRiPt:alert(1))',
  '[x]( javascript:alert(1))',
  '[x](data:text/html,<script>)',
  '[x](vbscript:x)',
  '![t](http://127.0.0.1/p.gif)',
  '![t](javascript:x)',
  '[a](https://ok.example/x "t")',
  'https://ok.example/a?b=<c>',
  '<a href="javascript:x">y</a>',
  '**',
  '*',
  '_',
  '`',
  '```',
  '~~~',
  '# ',
  '> ',
  '- ',
  '1. ',
  '\n',
  '\n\n',
  '[',
  ']',
  '(',
  ')',
  '"',
  "'",
  '&lt;',
  '&#60;script&#62;',
  '\u0000',
  '\u2028',
];
const source = fc
  .array(fc.oneof(fc.constantFrom(...fragments), fc.string({ maxLength: 12 })), { maxLength: 30 })
  .map((parts) => parts.join(''));

describe('run summary markdown', () => {
  it('renders the common forms as elements', () => {
    const html = render(
      '## Title\n\nSome **bold** and _em_ and `code`.\n\n- one\n- two\n\n```\n<b>raw</b>\n```\n\n> quoted\n\n[site](https://example.com/x)',
    );
    assert.match(html, /<h4>Title<\/h4>/);
    assert.match(html, /<strong>bold<\/strong>/);
    assert.match(html, /<em>em<\/em>/);
    assert.match(html, /<ul><li>one<\/li><li>two<\/li><\/ul>/);
    assert.match(html, /<pre><code>&lt;b&gt;raw&lt;\/b&gt;<\/code><\/pre>/);
    assert.match(
      html,
      /<a href="https:\/\/example.com\/x" target="_blank" rel="noopener noreferrer nofollow">site<\/a>/,
    );
    check(html);
  });

  it('ends on a line separator inside a heading or a list item (it used to loop for ever, freezing the tab)', () => {
    assert.equal(render('# a\u2028b'), '<div class="markdown"><h3>a\u2028b</h3></div>');
    assert.equal(render('- a\u2028b'), '<div class="markdown"><ul><li>a\u2028b</li></ul></div>');
  });

  it('never lets generated markdown add a tag, an attribute or a link target of its own', () => {
    fc.assert(
      fc.property(source, (md) => check(render(md))),
      { numRuns: 1500, seed: 1124 },
    );
  });
});
