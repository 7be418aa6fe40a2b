import type { Static } from 'typebox';
import type { Caps, Price } from '../schemas/provider.js';

/**
 * Built-in catalog of current models with list prices in micro-USD per 1M tokens (prices as published by the
 * providers, taken 2026-11; a catalog refresh updates models that follow it).
 */
export interface CatalogEntry {
  provider: 'anthropic' | 'openai';
  model: string;
  label: string;
  price: Static<typeof Price>;
  caps: Static<typeof Caps>;
}

const claude = (context: number) => ({ tools: true, parallelTools: true, reasoning: true, jsonSchema: false, promptCache: true, vision: true, context });
const gpt = (context: number, reasoning: boolean) => ({ tools: true, parallelTools: true, reasoning, jsonSchema: true, promptCache: true, vision: true, context });
const p = (input: number, output: number, cacheRead: number, cacheWrite: number) => ({ in: input, out: output, cacheRead, cacheWrite });

export const catalog: CatalogEntry[] = [
  { provider: 'anthropic', model: 'claude-opus-4-1', label: 'Claude Opus 4.1', price: p(15_000_000, 75_000_000, 1_500_000, 18_750_000), caps: claude(200_000) },
  { provider: 'anthropic', model: 'claude-sonnet-4-5', label: 'Claude Sonnet 4.5', price: p(3_000_000, 15_000_000, 300_000, 3_750_000), caps: claude(200_000) },
  { provider: 'anthropic', model: 'claude-haiku-4-5', label: 'Claude Haiku 4.5', price: p(1_000_000, 5_000_000, 100_000, 1_250_000), caps: claude(200_000) },
  { provider: 'openai', model: 'gpt-5', label: 'GPT-5', price: p(1_250_000, 10_000_000, 125_000, 0), caps: gpt(400_000, true) },
  { provider: 'openai', model: 'gpt-5-mini', label: 'GPT-5 mini', price: p(250_000, 2_000_000, 25_000, 0), caps: gpt(400_000, true) },
  { provider: 'openai', model: 'gpt-5-nano', label: 'GPT-5 nano', price: p(50_000, 400_000, 5_000, 0), caps: gpt(400_000, true) },
  { provider: 'openai', model: 'gpt-4.1', label: 'GPT-4.1', price: p(2_000_000, 8_000_000, 500_000, 0), caps: gpt(1_047_576, false) },
  { provider: 'openai', model: 'o4-mini', label: 'o4-mini', price: p(1_100_000, 4_400_000, 275_000, 0), caps: gpt(200_000, true) },
];
