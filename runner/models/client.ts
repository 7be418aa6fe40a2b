import { AnthropicClient } from './anthropic.js';
import { FakeClient } from './fake.js';
import { OpenAiClient } from './openai.js';
import type { ModelClient, ProviderConfig } from './types.js';

export function createModelClient(config: ProviderConfig): ModelClient {
  switch (config.kind) {
    case 'fake':
      return new FakeClient(config.id);
    case 'anthropic':
      return new AnthropicClient(config);
    case 'openai':
      return new OpenAiClient(config);
  }
}
