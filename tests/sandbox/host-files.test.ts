import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostFiles } from '../../adapters/sandbox/host-files.js';

/**
 * bwrap's reading back, on a real directory, for what no process inside a sandbox can make but the host must still
 * refuse (docs/security.md, "Reading back from sandboxes"): files and directories of another owner, and hard links to
 * the host's own files. These need root, as the service does.
 */
const uid = 2_000_001_999;
const isRoot = process.getuid?.() === 0;

describe(
  'host files of a sandbox',
  { skip: isRoot ? false : '!!! needs root to chown (the service runs as root): NOT TESTED' },
  () => {
    let base: string;
    let svc: string;
    let files: HostFiles;
    let secret: string;

    before(() => {
      base = mkdtempSync(join(tmpdir(), 'svc-hostfiles-'));
      svc = join(base, 'svc');
      mkdirSync(join(svc, 'outputs', 'mine'), { recursive: true });
      for (const d of ['svc', 'svc/outputs', 'svc/outputs/mine']) chownSync(join(base, d), uid, uid);
      // A root-only host file on the same filesystem, and the ways it could end up inside the sandbox's directory.
      secret = join(base, 'master.key');
      writeFileSync(secret, 'host secret\n', { mode: 0o600 });
      linkSync(secret, join(svc, 'outputs', 'hard-link'));
      writeFileSync(join(svc, 'outputs', 'root-owned.txt'), "not the sandbox's\n");
      mkdirSync(join(svc, 'outputs', 'root-dir'));
      writeFileSync(join(svc, 'outputs', 'root-dir', 'inner.txt'), 'inner');
      chownSync(join(svc, 'outputs', 'root-dir', 'inner.txt'), uid, uid);
      symlinkSync(secret, join(svc, 'outputs', 'link'));
      writeFileSync(join(svc, 'outputs', 'mine', 'ok.txt'), 'ok');
      chownSync(join(svc, 'outputs', 'mine', 'ok.txt'), uid, uid);
      files = new HostFiles({ '/svc': svc }, uid);
    });
    after(() => rmSync(base, { recursive: true, force: true }));

    it("lists and reads only the sandbox's own regular files", async () => {
      const all = await files.readDir('/svc/outputs', 1_000_000);
      assert.deepEqual(
        all.files.map((f) => [f.name, f.content.toString('utf8')]),
        [['mine/ok.txt', 'ok']],
      );
      assert.equal(await files.read('/svc/outputs/mine/ok.txt', 100).then((b) => b?.toString('utf8')), 'ok');
      for (const path of [
        '/svc/outputs/hard-link',
        '/svc/outputs/root-owned.txt',
        '/svc/outputs/link',
        '/svc/outputs/root-dir/inner.txt',
      ]) {
        await assert.rejects(files.read(path, 1000), Error, `read(${path}) was refused`);
      }
      await assert.rejects(files.readDir('/svc/outputs/root-dir', 1000), /does not own/);
    });

    it('never writes into a file or directory of another owner, or through a link', async () => {
      for (const path of [
        '/svc/outputs/hard-link',
        '/svc/outputs/root-owned.txt',
        '/svc/outputs/link',
        '/svc/outputs/root-dir/new.txt',
      ]) {
        await assert.rejects(files.put([{ path, content: 'overwritten' }]), Error, `put(${path}) was refused`);
      }
      assert.equal(readFileSync(secret, 'utf8'), 'host secret\n');
      await files.put([{ path: '/svc/outputs/mine/deeper/new.txt', content: 'new', mode: 0o640 }]);
      assert.equal(await files.read('/svc/outputs/mine/deeper/new.txt', 100).then((b) => b?.toString('utf8')), 'new');
    });

    it('refuses paths that leave the mounts or carry odd components', async () => {
      for (const path of ['/etc/passwd', 'svc/outputs/x', '/svc/../etc/passwd', '/svcx/a', '/']) {
        await assert.rejects(files.read(path, 100), Error, `read(${path}) was refused`);
      }
      assert.equal(await files.read('/svc/outputs/missing', 100), null);
      assert.deepEqual(await files.readDir('/svc/outputs/missing', 100), { files: [], truncated: false });
    });
  },
);
