import { catalog } from '../domain/catalog.js';
import type { ModelSpec, ProviderKind } from '../domain/provider.js';

type Listed = Omit<ModelSpec, 'modelId' | 'synced' | 'followCatalog'>;
const unknownContext = 32_768;

/** Where a provider's models come from (docs/models.md, "Sources and sync"): catalog, server /models, or by hand. */
export function sourceOf(kind: ProviderKind, baseUrl: string | null): 'catalog' | 'server' | 'manual' {
  if (kind === 'fake') return 'manual';
  if (kind === 'anthropic' || !baseUrl || /^https:\/\/api\.openai\.com(\/|$)/.test(baseUrl)) return 'catalog';
  return 'server';
}

/** Reads what the source lists now; throws with a readable reason when it cannot. */
export async function listModels(
  kind: ProviderKind,
  baseUrl: string | null,
  apiKey: string | null,
): Promise<Listed[] | null> {
  const source = sourceOf(kind, baseUrl);
  if (source === 'manual') return null;
  if (source === 'catalog')
    return catalog
      .filter((c) => c.provider === kind)
      .map(({ model, label, price, caps }) => ({ model, label, price, caps }));
  const res = await fetch(`${baseUrl}/models`, {
    headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`GET ${baseUrl}/models answered ${res.status}`);
  const body = (await res.json()) as {
    data?: Array<{ id?: unknown; context_length?: unknown; context_window?: unknown }>;
  };
  if (!Array.isArray(body.data)) throw new Error(`GET ${baseUrl}/models did not answer a model list`);
  return body.data
    .filter((m): m is { id: string } => typeof m.id === 'string' && m.id.length > 0 && m.id.length <= 200)
    .map((m) => {
      const known = catalog.find((c) => c.model === m.id);
      const ctx = [(m as Record<string, unknown>).context_length, (m as Record<string, unknown>).context_window].find(
        (v) => typeof v === 'number',
      ) as number | undefined;
      return known
        ? { model: m.id, label: known.label, price: known.price, caps: known.caps }
        : {
            model: m.id,
            label: null,
            price: { in: 0, out: 0, cacheRead: 0, cacheWrite: 0 },
            caps: {
              tools: true,
              parallelTools: true,
              reasoning: false,
              jsonSchema: false,
              promptCache: false,
              vision: false,
              context: ctx ?? unknownContext,
            },
          };
    });
}
