import type { Caps, Price } from './model-types.js';

/**
 * Built-in catalog of Anthropic and OpenAI models: what `GET /api/catalog/models` answers and what a `catalog` provider
 * syncs from (docs/models.md, "Sources and sync"). Prices are the providers' list prices per 1M tokens in micro-USD
 * (1_000_000 = 1 USD), standard tier, taken from their pricing pages in November 2025; models newer than that are not
 * listed. Edit this list when a price changes: synced models that follow the catalog take the new values at their next
 * sync (counted as `updated`).
 *
 * Anthropic: cache reads cost 0.1× input, cache writes (5-minute) 1.25× input. OpenAI charges nothing for cache
 * writes. `jsonSchema` is false for Claude models, so structured answers go through the forced-tool fallback,
 * which every Claude model supports; OpenAI models have native structured outputs. o-series models are marked
 * without parallel tool calls.
 */
export interface CatalogEntry {
  provider: 'anthropic' | 'openai';
  model: string;
  label: string;
  price: Price;
  caps: Caps;
}

const usd = (dollars: number) => Math.round(dollars * 1_000_000);
const p = (input: number, output: number, cacheRead: number, cacheWrite: number) => ({
  in: usd(input),
  out: usd(output),
  cacheRead: usd(cacheRead),
  cacheWrite: usd(cacheWrite),
});
const claudePrice = (input: number, output: number) => p(input, output, input * 0.1, input * 1.25);
const claude = () => ({
  tools: true,
  parallelTools: true,
  reasoning: true,
  jsonSchema: false,
  promptCache: true,
  vision: true,
  context: 200_000,
});
const gpt = (context: number, reasoning: boolean) => ({
  tools: true,
  parallelTools: true,
  reasoning,
  jsonSchema: true,
  promptCache: true,
  vision: true,
  context,
});
const oSeries = (vision: boolean) => ({
  tools: true,
  parallelTools: false,
  reasoning: true,
  jsonSchema: true,
  promptCache: true,
  vision,
  context: 200_000,
});

export const catalog: CatalogEntry[] = [
  {
    provider: 'anthropic',
    model: 'claude-opus-4-5',
    label: 'Claude Opus 4.5',
    price: claudePrice(5, 25),
    caps: claude(),
  },
  {
    provider: 'anthropic',
    model: 'claude-opus-4-1',
    label: 'Claude Opus 4.1',
    price: claudePrice(15, 75),
    caps: claude(),
  },
  {
    provider: 'anthropic',
    model: 'claude-opus-4-0',
    label: 'Claude Opus 4',
    price: claudePrice(15, 75),
    caps: claude(),
  },
  {
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    label: 'Claude Sonnet 4.5',
    price: claudePrice(3, 15),
    caps: claude(),
  },
  {
    provider: 'anthropic',
    model: 'claude-sonnet-4-0',
    label: 'Claude Sonnet 4',
    price: claudePrice(3, 15),
    caps: claude(),
  },
  {
    provider: 'anthropic',
    model: 'claude-haiku-4-5',
    label: 'Claude Haiku 4.5',
    price: claudePrice(1, 5),
    caps: claude(),
  },

  { provider: 'openai', model: 'gpt-5.1', label: 'GPT-5.1', price: p(1.25, 10, 0.125, 0), caps: gpt(400_000, true) },
  { provider: 'openai', model: 'gpt-5', label: 'GPT-5', price: p(1.25, 10, 0.125, 0), caps: gpt(400_000, true) },
  {
    provider: 'openai',
    model: 'gpt-5-mini',
    label: 'GPT-5 mini',
    price: p(0.25, 2, 0.025, 0),
    caps: gpt(400_000, true),
  },
  {
    provider: 'openai',
    model: 'gpt-5-nano',
    label: 'GPT-5 nano',
    price: p(0.05, 0.4, 0.005, 0),
    caps: gpt(400_000, true),
  },
  { provider: 'openai', model: 'gpt-4.1', label: 'GPT-4.1', price: p(2, 8, 0.5, 0), caps: gpt(1_047_576, false) },
  {
    provider: 'openai',
    model: 'gpt-4.1-mini',
    label: 'GPT-4.1 mini',
    price: p(0.4, 1.6, 0.1, 0),
    caps: gpt(1_047_576, false),
  },
  {
    provider: 'openai',
    model: 'gpt-4.1-nano',
    label: 'GPT-4.1 nano',
    price: p(0.1, 0.4, 0.025, 0),
    caps: gpt(1_047_576, false),
  },
  { provider: 'openai', model: 'o3', label: 'o3', price: p(2, 8, 0.5, 0), caps: oSeries(true) },
  { provider: 'openai', model: 'o4-mini', label: 'o4-mini', price: p(1.1, 4.4, 0.275, 0), caps: oSeries(true) },
  { provider: 'openai', model: 'o3-mini', label: 'o3-mini', price: p(1.1, 4.4, 0.55, 0), caps: oSeries(false) },
];
