import { FakeClient } from './fake.js';
import { ModelError, type ModelClient, type ProviderConfig } from './types.js';

export function createModelClient(config: ProviderConfig): ModelClient {
  switch (config.kind) {
    case 'fake':
      return new FakeClient(config.id);
    default:
      // The Anthropic and OpenAI adapters are the next step of this issue; until then a run says so plainly.
      return { complete: () => Promise.reject(new ModelError(`the ${config.kind} adapter is not available in this build yet`, null, false)) };
  }
}
