import type { ReactNode } from 'react';

/**
 * A small markdown renderer for run summaries, which come from a model or a script and are untrusted. It builds
 * React elements and never HTML: raw HTML in the text shows as text, images are never fetched (shown as a link
 * label), and links keep only http(s) and mailto targets (docs/security.md, "Web app").
 */

type Block =
  | { kind: 'heading'; level: number; text: string }
  | { kind: 'code'; text: string }
  | { kind: 'list'; ordered: boolean; items: string[] }
  | { kind: 'quote'; text: string }
  | { kind: 'rule' }
  | { kind: 'para'; text: string };

function blocks(source: string): Block[] {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const out: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      const marker = fence[1];
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(marker)) body.push(lines[i++]);
      i++;
      out.push({ kind: 'code', text: body.join('\n') });
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/s.exec(line);
    if (heading) {
      out.push({ kind: 'heading', level: heading[1].length, text: heading[2].replace(/\s+#+\s*$/, '') });
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.push({ kind: 'rule' });
      i++;
      continue;
    }
    const item = /^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/s;
    if (item.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const items: string[] = [];
      while (i < lines.length && item.test(lines[i])) {
        let text = item.exec(lines[i])![2];
        i++;
        // Indented continuation lines belong to the item.
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !item.test(lines[i])) text += ' ' + lines[i++].trim();
        items.push(text);
      }
      out.push({ kind: 'list', ordered, items });
      continue;
    }
    if (/^\s*>/.test(line)) {
      const body: string[] = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ''));
      out.push({ kind: 'quote', text: body.join('\n') });
      continue;
    }
    if (line.trim() === '') {
      i++;
      continue;
    }
    const body: string[] = [];
    while (
      i < lines.length &&
      lines[i].trim() !== '' &&
      !/^(#{1,6}\s|\s*(`{3,}|~{3,})|\s*>|\s*([-*+]|\d{1,9}[.)])\s)/.test(lines[i])
    )
      body.push(lines[i++]);
    // Every pass consumes a line: a line no rule above took (one a block pattern half-matched) is a paragraph.
    if (body.length === 0) body.push(lines[i++]);
    out.push({ kind: 'para', text: body.join('\n') });
  }
  return out;
}

/** Only targets that cannot run code or reach into the app: absolute http(s) and mailto. */
export function safeHref(raw: string): string | null {
  const href = raw.trim();
  if (/^https?:\/\/[^\s]+$/i.test(href) || /^mailto:[^\s]+$/i.test(href)) return href;
  return null;
}

const inlinePattern =
  /(`+)([\s\S]*?[^`])\1(?!`)|!\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)|\[([^\]]+)\]\(([^)\s]*)(?:\s+"[^"]*")?\)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|\*([^*\s][^*]*?)\*|_([^_\s][^_]*?)_|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/;

function inline(text: string, key: string): ReactNode[] {
  const nodes: ReactNode[] = [];
  let rest = text;
  let n = 0;
  while (rest.length > 0) {
    const m = inlinePattern.exec(rest);
    if (!m) {
      nodes.push(rest);
      break;
    }
    if (m.index > 0) nodes.push(rest.slice(0, m.index));
    const k = `${key}.${n++}`;
    if (m[1] !== undefined) nodes.push(<code key={k}>{m[2]}</code>);
    else if (m[4] !== undefined)
      nodes.push(
        <span key={k} className="md-image" title={m[4]}>
          [image: {m[3] || 'untitled'}]
        </span>,
      );
    else if (m[5] !== undefined) {
      const href = safeHref(m[6]);
      nodes.push(
        href ? (
          <a key={k} href={href} target="_blank" rel="noopener noreferrer nofollow">
            {inline(m[5], k)}
          </a>
        ) : (
          <span key={k}>{inline(m[5], k)}</span>
        ),
      );
    } else if (m[7] !== undefined || m[8] !== undefined) nodes.push(<strong key={k}>{inline(m[7] ?? m[8], k)}</strong>);
    else if (m[9] !== undefined || m[10] !== undefined) nodes.push(<em key={k}>{inline(m[9] ?? m[10], k)}</em>);
    else if (m[11] !== undefined)
      nodes.push(
        <a key={k} href={m[11]} target="_blank" rel="noopener noreferrer nofollow">
          {m[11]}
        </a>,
      );
    rest = rest.slice(m.index + m[0].length);
  }
  return nodes;
}

function withBreaks(text: string, key: string): ReactNode[] {
  return text
    .split('\n')
    .flatMap((line, i) =>
      i === 0 ? inline(line, `${key}l${i}`) : [<br key={`${key}br${i}`} />, ...inline(line, `${key}l${i}`)],
    );
}

export function Markdown({ source }: { source: string }) {
  return (
    <div className="markdown">
      {blocks(source).map((b, i) => {
        const k = String(i);
        switch (b.kind) {
          case 'heading': {
            const level = Math.min(6, b.level + 2);
            const H = `h${level}` as 'h3' | 'h4' | 'h5' | 'h6';
            return <H key={k}>{inline(b.text, k)}</H>;
          }
          case 'code':
            return (
              <pre key={k}>
                <code>{b.text}</code>
              </pre>
            );
          case 'list': {
            const items = b.items.map((t, j) => <li key={j}>{inline(t, `${k}.${j}`)}</li>);
            return b.ordered ? <ol key={k}>{items}</ol> : <ul key={k}>{items}</ul>;
          }
          case 'quote':
            return <blockquote key={k}>{withBreaks(b.text, k)}</blockquote>;
          case 'rule':
            return <hr key={k} />;
          case 'para':
            return <p key={k}>{withBreaks(b.text, k)}</p>;
        }
      })}
    </div>
  );
}
