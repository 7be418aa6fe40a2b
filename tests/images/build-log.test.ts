import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BuildLog } from '../../runner/image-builder.js';
import { ImageLogs } from '../../app/images.js';
import { FileBlobStore } from '../../store/blob-store-files.js';
import { waitFor } from '../wait.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-build-log-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('build log', () => {
  it('is saved under images/<id>/build.log while the build runs', async (t) => {
    // The save timer's 2 s pass on a mocked interval; the save itself is real file I/O, waited for.
    t.mock.timers.enable({ apis: ['setInterval'] });
    const logs = new ImageLogs(new FileBlobStore(dir));
    const log = new BuildLog(logs, 'img-1');
    log.start();
    log.line('Step 1/2 : FROM svc-base:bookworm');
    t.mock.timers.tick(2000);
    await waitFor(
      'the save by the 2 s timer, before the end',
      async () => (await logs.read('img-1')) === 'Step 1/2 : FROM svc-base:bookworm\n',
    );
    log.line('done');
    await log.close();
    assert.equal(await logs.read('img-1'), 'Step 1/2 : FROM svc-base:bookworm\ndone\n');
    assert.equal(readFileSync(join(dir, 'images', 'img-1', 'build.log'), 'utf8'), await logs.read('img-1'));
    assert.equal(await logs.read('missing'), '');
    await assert.rejects(logs.read('../escape'), /not an image id/);
  });

  it('keeps only the last 2 MiB once it passes 4 MiB', async () => {
    const logs = new ImageLogs(new FileBlobStore(dir));
    const log = new BuildLog(logs, 'img-2');
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 4 * 1024 + 1; i++) log.append(line);
    log.line('the end');
    await log.close();
    const saved = await logs.read('img-2');
    assert.ok(Buffer.byteLength(saved) <= 2 * 1024 * 1024 + 100, `kept ${Buffer.byteLength(saved)} bytes`);
    assert.ok(Buffer.byteLength(saved) > 2 * 1024 * 1024 - 2048);
    assert.match(saved, /^\[earlier output dropped: the log keeps its last 2 MiB\]\n/);
    assert.ok(saved.endsWith('the end\n'));
  });
});
