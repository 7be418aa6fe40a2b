import { FakeClient } from './fake.js';
import type { ModelClient, ModelRequest, ModelResponse, ProviderConfig } from './types.js';

/** A provider's client, its SDK loaded on the first call: an instance that never uses a kind never pays for it. */
class LazyClient implements ModelClient {
  private client: Promise<ModelClient> | null = null;
  constructor(private readonly load: () => Promise<ModelClient>) {}
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.client ??= this.load();
    return (await this.client).complete(request);
  }
}

export function createModelClient(config: ProviderConfig): ModelClient {
  switch (config.kind) {
    case 'fake':
      return new FakeClient(config.id);
    case 'anthropic':
      return new LazyClient(async () => new (await import('./anthropic.js')).AnthropicClient(config));
    case 'openai':
      return new LazyClient(async () => new (await import('./openai.js')).OpenAiClient(config));
  }
}
