import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { missingSettings, serveEnv, serveNodeFlags } from '../../cli/memory-settings.js';

describe('the memory settings svc serve starts with', () => {
  it('are all missing from a plain start', () => {
    assert.deepEqual(missingSettings([], {}), { flags: [...serveNodeFlags], env: { ...serveEnv } });
  });

  it('are all there when npm start gives them, so no second process is started', () => {
    assert.deepEqual(missingSettings([...serveNodeFlags], { ...serveEnv }), { flags: [], env: {} });
  });

  it("leave an operator's own choice alone, in the flags, in NODE_OPTIONS, with underscores or as --no-", () => {
    for (const flag of serveNodeFlags) {
      const name = flag.replace(/^--/, '').split('=')[0]!;
      const others = serveNodeFlags.filter((f) => f !== flag);
      const spellings = [`--${name}=99`, `--${name.replace(/-/g, '_')}=99`, `--no-${name}`, `--${name}`];
      for (const given of spellings) {
        assert.deepEqual(missingSettings([given], {}).flags, others, given);
        assert.deepEqual(missingSettings([], { NODE_OPTIONS: `--inspect ${given}` }).flags, others, given);
      }
    }
    assert.deepEqual(missingSettings([], { MALLOC_ARENA_MAX: '8' }).env, {});
    // An empty value is the operator's too: glibc reads it as unset, which is what they asked for.
    assert.deepEqual(missingSettings([], { MALLOC_ARENA_MAX: '' }).env, {});
  });

  it('are not taken for given by a flag that only starts the same', () => {
    // Node has no flag named after ours with a suffix; an unrelated flag must not count.
    assert.deepEqual(missingSettings(['--max-old-space-size=512', '--import', 'tsx'], {}).flags, [...serveNodeFlags]);
  });
});
