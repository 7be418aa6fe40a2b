import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../app/config.js';

describe('service configuration', () => {
  it('refuses the scaled adapters without a master key, saying what to set', () => {
    for (const env of [
      { SVC_EVENTSTORE_URL: 'esdb://127.0.0.1:2113?tls=false' },
      { SVC_MONGO_URL: 'mongodb://127.0.0.1:27017/svc' },
      { SVC_MONGO_URL: 'mongodb://127.0.0.1:27017/svc', SVC_MASTER_KEY: '   ' },
    ]) {
      assert.throws(
        () => loadConfig({}, env),
        (err: unknown) => err instanceof ConfigError && /SVC_MASTER_KEY must be set/.test(err.message),
        JSON.stringify(env),
      );
    }
  });

  it('starts the scaled adapters with a master key, and the embedded ones without', () => {
    const scaled = loadConfig({}, { SVC_MONGO_URL: 'mongodb://127.0.0.1:27017/svc', SVC_MASTER_KEY: 'k'.repeat(44) });
    assert.equal(scaled.mongoUrl, 'mongodb://127.0.0.1:27017/svc');
    const embedded = loadConfig({}, {});
    assert.equal(embedded.eventStoreUrl, null);
    assert.equal(embedded.masterKey, undefined);
  });
});
