/**
 * A small ranked text search over a fixed set of passages (the service's docs and its OpenAPI operations, for the MCP
 * server's `search_docs`; docs/mcp-server.md, "search_docs"). Pure: the caller reads the files.
 */

export interface Passage {
  /** Where the passage comes from, e.g. `docs/api.md#Lists` or `openapi:POST /api/jobs`. */
  source: string;
  title: string;
  text: string;
}

export interface Hit {
  source: string;
  title: string;
  snippet: string;
  score: number;
}

interface Indexed {
  passage: Passage;
  title: Map<string, number>;
  body: Map<string, number>;
  length: number;
  lower: string;
}

const maxTerms = 20;
const snippetChars = 300;

/** Lower-case words of two characters or more; a path like `/api/jobs` yields `api` and `jobs`. */
export function terms(text: string): string[] {
  return text.toLowerCase().match(/[a-z0-9_]{2,}/g) ?? [];
}

function counts(words: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const w of words) m.set(w, (m.get(w) ?? 0) + 1);
  return m;
}

/** An index built once; `search` ranks by BM25 over the body, with title matches weighted three times. */
export class TextIndex {
  private readonly items: Indexed[];
  private readonly documentFrequency = new Map<string, number>();
  private readonly averageLength: number;

  constructor(passages: Passage[]) {
    this.items = passages.map((passage) => {
      const body = terms(passage.text);
      return {
        passage,
        title: counts(terms(passage.title)),
        body: counts(body),
        length: body.length,
        lower: passage.text.toLowerCase(),
      };
    });
    for (const item of this.items) {
      const seen = new Set([...item.title.keys(), ...item.body.keys()]);
      for (const t of seen) this.documentFrequency.set(t, (this.documentFrequency.get(t) ?? 0) + 1);
    }
    this.averageLength = this.items.reduce((a, i) => a + i.length, 0) / Math.max(1, this.items.length);
  }

  get size(): number {
    return this.items.length;
  }

  search(query: string, limit: number): Hit[] {
    const wanted = [...new Set(terms(query))].slice(0, maxTerms);
    if (wanted.length === 0) return [];
    const n = this.items.length;
    const k1 = 1.2;
    const b = 0.75;
    const scored: Array<{ item: Indexed; score: number }> = [];
    for (const item of this.items) {
      let score = 0;
      for (const t of wanted) {
        const df = this.documentFrequency.get(t);
        if (!df) continue;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        const tf = item.body.get(t) ?? 0;
        const norm = tf === 0 ? 0 : (tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * item.length) / this.averageLength));
        score += idf * (norm + 3 * Math.min(1, item.title.get(t) ?? 0));
      }
      // The whole query as a phrase counts once more, so "overlap policy" prefers the passage that says exactly that.
      if (wanted.length > 1 && item.lower.includes(query.toLowerCase().trim())) score *= 1.5;
      if (score > 0) scored.push({ item, score });
    }
    scored.sort((x, y) => y.score - x.score || x.item.passage.source.localeCompare(y.item.passage.source));
    return scored.slice(0, limit).map(({ item, score }) => ({
      source: item.passage.source,
      title: item.passage.title,
      snippet: snippet(item.passage.text, item.lower, wanted),
      score: Math.round(score * 1000) / 1000,
    }));
  }
}

/** About `snippetChars` characters of the text around the first place a query term appears, whitespace folded. */
function snippet(text: string, lower: string, wanted: string[]): string {
  let at = -1;
  for (const t of wanted) {
    const i = lower.indexOf(t);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  const start = Math.max(0, at - snippetChars / 3);
  const end = Math.min(text.length, start + snippetChars);
  const cut = text.slice(start, end).replace(/\s+/g, ' ').trim();
  return `${start > 0 ? '…' : ''}${cut}${end < text.length ? '…' : ''}`;
}

/** A Markdown file cut at its `##` and `###` headings; each section is a passage named `path#Heading`. */
export function markdownSections(path: string, markdown: string): Passage[] {
  const out: Passage[] = [];
  let title = '';
  let lines: string[] = [];
  const flush = () => {
    const text = lines.join('\n').trim();
    if (text !== '' || title !== '')
      out.push({ source: title ? `${path}#${title}` : path, title: title || path, text });
  };
  for (const line of markdown.split('\n')) {
    const heading = /^(#{1,3})\s+(.+?)\s*$/.exec(line);
    if (heading) {
      flush();
      title = heading[2]!;
      lines = [];
    } else lines.push(line);
  }
  flush();
  return out;
}
