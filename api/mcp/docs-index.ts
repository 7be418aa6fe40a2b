import { readdir, readFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { markdownSections, TextIndex, type Passage } from '../../domain/text-search.js';

type Json = Record<string, unknown>;

/** The repository's `docs/` folder, from the sources (tsx) or from `dist/` (the built server; the image ships both). */
export function docsFolder(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const root = resolve(here, '../..');
  return basename(root) === 'dist' ? resolve(root, '../docs') : resolve(root, 'docs');
}

/** The field names of a request body, following one `$ref` into the document's components. */
function bodyFields(op: Json, components: Json): string[] {
  const content = (op.requestBody as Json | undefined)?.content as Json | undefined;
  let schema = (content?.['application/json'] as Json | undefined)?.schema as Json | undefined;
  const ref = schema?.$ref;
  if (typeof ref === 'string') schema = components[ref.replace('#/components/schemas/', '')] as Json | undefined;
  return Object.keys((schema?.properties as Json | undefined) ?? {});
}

/** One passage per operation of the OpenAPI document: method and path, summary, description, parameters, fields. */
export function openApiPassages(doc: Json): Passage[] {
  const components = ((doc.components as Json | undefined)?.schemas as Json | undefined) ?? {};
  const out: Passage[] = [];
  for (const [path, ops] of Object.entries((doc.paths as Json | undefined) ?? {})) {
    for (const [method, raw] of Object.entries(ops as Json)) {
      const op = raw as Json;
      const name = `${method.toUpperCase()} ${path}`;
      const params = ((op.parameters as Json[] | undefined) ?? []).map((p) => `${String(p.name)} (${String(p.in)})`);
      const fields = bodyFields(op, components);
      const access = op['x-access'] as { role?: string; session?: boolean } | undefined;
      out.push({
        source: `openapi:${name}`,
        title: `${name}: ${String(op.summary ?? '')}`,
        text: [
          name,
          String(op.summary ?? ''),
          typeof op.description === 'string' ? op.description : '',
          params.length ? `Parameters: ${params.join(', ')}` : '',
          fields.length ? `Body fields: ${fields.join(', ')}` : '',
          access ? `Access: ${access.role ?? ''}${access.session ? ', session only' : ''}` : '',
        ]
          .filter(Boolean)
          .join('\n'),
      });
    }
  }
  return out;
}

/** Every `docs/*.md` section and every API operation, indexed once per process on first use. */
export async function buildDocsIndex(openapi: Json, folder = docsFolder()): Promise<TextIndex> {
  const passages: Passage[] = [];
  let names: string[] = [];
  try {
    names = (await readdir(folder)).filter((n) => n.endsWith('.md')).sort();
  } catch {
    // A build without the docs folder still searches the API document.
  }
  for (const name of names)
    passages.push(...markdownSections(`docs/${name}`, await readFile(join(folder, name), 'utf8')));
  passages.push(...openApiPassages(openapi));
  return new TextIndex(passages);
}
