import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunFiles } from '../../adapters/run-files.js';
import { BlobIntegrityError } from '../../store/blob-store.js';
import { FileBlobStore } from '../../store/blob-store-files.js';

/**
 * A run's files through the blob store (docs/design.md, "Large payloads out of line"): confined to the run, in the
 * data directory's old layout, and files written before the port read as they are.
 */
const dir = mkdtempSync(join(tmpdir(), 'svc-run-files-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const blobs = new FileBlobStore(dir);
const files = new RunFiles(blobs);

async function read(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += (chunk as Buffer).toString('utf8');
  return text;
}

describe('run files', () => {
  it('keeps artifacts at runs/<id>/artifacts and lists them depth first, by name', async () => {
    const runId = randomUUID();
    for (const name of ['b.txt', 'a/z.txt', 'a.txt', 'a/b/c.txt', 'A-upper.txt'])
      await files.saveArtifact(runId, name, Buffer.from(name));
    assert.ok(existsSync(join(dir, 'runs', runId, 'artifacts', 'a', 'b', 'c.txt')), 'the layout of the data directory');
    // Each folder's entries by localeCompare, as the directory walk before the port listed them.
    assert.deepEqual(
      (await files.artifacts(runId)).map((a) => a.name),
      ['a/b/c.txt', 'a/z.txt', 'A-upper.txt', 'a.txt', 'b.txt'],
    );
    const opened = await files.openArtifact(runId, '/a/../a/z.txt');
    assert.equal(opened?.bytes, 7);
    assert.equal(await read(opened!.stream), 'a/z.txt');
  });

  it("never reaches outside the run's artifacts, whatever the path or run id", async () => {
    const runId = randomUUID();
    await files.saveArtifact(runId, 'ok.txt', Buffer.from('ok'));
    writeFileSync(join(dir, 'master.key'), 'secret');
    for (const path of ['../../../master.key', '..', '.', 'a/../../x', '', '/', 'dir/', 'nul\0'])
      assert.equal(await files.openArtifact(runId, path), null, JSON.stringify(path));
    for (const bad of ['..', '../runs', 'a/b', '', 'x'.repeat(101)]) {
      assert.equal(await files.openArtifact(bad, 'ok.txt'), null, `run id ${JSON.stringify(bad)}`);
      await files.remove(bad);
    }
    assert.ok(existsSync(join(dir, 'master.key')), 'a bad run id removed nothing');
    await assert.rejects(files.saveArtifact(runId, '../escape', Buffer.from('x')), /outside the run's outputs/);
    await files.saveCandidate(runId, '../../escape.sh', Buffer.from('x'));
    assert.equal(existsSync(join(dir, 'runs', 'escape.sh')), false);
  });

  it('reads whole payloads written before the port by name, and checks the hash of newer ones', async () => {
    const runId = randomUUID();
    const old = `${randomUUID()}.json`;
    mkdirSync(join(dir, 'runs', runId, 'events'), { recursive: true });
    writeFileSync(join(dir, 'runs', runId, 'events', old), JSON.stringify({ old: true }));
    assert.deepEqual(await files.readPayload(runId, old), { old: true }, 'an entry without a hash');

    const stored = await files.savePayload(runId, JSON.stringify({ whole: 'x'.repeat(20_000) }));
    assert.match(stored.sha256, /^[0-9a-f]{64}$/);
    assert.equal(
      ((await files.readPayload(runId, stored.name, stored.sha256)) as { whole: string }).whole.length,
      20_000,
    );
    writeFileSync(join(dir, 'runs', runId, 'events', stored.name), JSON.stringify({ whole: 'forged' }));
    await assert.rejects(files.readPayload(runId, stored.name, stored.sha256), BlobIntegrityError);
    assert.equal(await files.readPayload(runId, '../../master.key'), null);
    assert.equal(await files.readPayload(runId, `${randomUUID()}.json`), null, 'gone (retention)');
  });

  it('removes everything of one run and nothing of another', async () => {
    const [gone, kept] = [randomUUID(), randomUUID()];
    for (const id of [gone, kept]) {
      await files.saveArtifact(id, 'a.txt', Buffer.from('a'));
      await files.saveCandidate(id, 'fetch.sh', Buffer.from('#!/bin/sh'));
      await files.savePayload(id, '{}');
    }
    await files.remove(gone);
    assert.deepEqual(await blobs.list(`runs/${gone}/`), []);
    assert.equal((await blobs.list(`runs/${kept}/`)).length, 3);
    assert.deepEqual(await files.candidates(kept, 10, 100), [{ name: 'fetch.sh', content: '#!/bin/sh' }]);
  });
});
