import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ignoreFailure, type DebugLog } from '../../domain/ignore-failure.js';

/** A debug log that keeps what it is given. */
function recording(): DebugLog & { entries: Array<{ obj: object; msg: string }> } {
  const entries: Array<{ obj: object; msg: string }> = [];
  return { entries, debug: (obj, msg) => void entries.push({ obj, msg }) };
}

describe('ignoreFailure', () => {
  it('resolves a rejected promise and logs the reason with the error message at debug level', async () => {
    const log = recording();
    const settled = await Promise.reject(new Error('socket hang up')).catch(
      ignoreFailure('the sandbox is destroyed next', log),
    );
    assert.equal(settled, undefined);
    assert.deepEqual(log.entries, [
      {
        obj: { reason: 'the sandbox is destroyed next', error: 'socket hang up' },
        msg: 'ignored a failure: the sandbox is destroyed next',
      },
    ]);
  });

  it('logs the message of a rejection that is not an Error', async () => {
    const log = recording();
    await Promise.reject(new Error('x')).catch(ignoreFailure('first', log));
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a library may reject with anything
    await Promise.reject('ECONNRESET').catch(ignoreFailure('second', log));
    assert.deepEqual(
      log.entries.map((e) => e.obj),
      [
        { reason: 'first', error: 'x' },
        { reason: 'second', error: 'ECONNRESET' },
      ],
    );
  });

  it('logs nothing when the work succeeds, and resolves without a log', async () => {
    const log = recording();
    assert.equal(await Promise.resolve(7).catch(ignoreFailure('unused', log)), 7);
    assert.equal(log.entries.length, 0);
    await assert.doesNotReject(Promise.reject(new Error('no log here')).catch(ignoreFailure('no log at hand')));
  });
});
