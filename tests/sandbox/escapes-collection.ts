import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import type { ExecResult, Sandbox, SandboxBackend, SandboxSpec } from '../../adapters/sandbox/types.js';
import { hostProcessesNamed, testSpec } from './fixture.js';
import { staysFalse, waitFor } from '../wait.js';
import { errorMessage } from '../../domain/error-message.js';

/**
 * Escapes through reading back from a sandbox (docs/security.md, "Reading back from sandboxes"): whatever a sandbox
 * does to its own files, even while the host collects them, the host never reads, lists or copies a file outside
 * that sandbox. `factory` is the conformance suite's: a backend on `root`, a fresh 0711 directory under os.tmpdir().
 *
 * The secret is a root-only (0600) host file with a random marker, the stand-in for the data directory's master.key.
 * Links inside the sandbox name its host path: on bwrap that path is exactly what a host read that follows the link
 * would open, which is the attack.
 */
export function collectionEscapes(
  name: string,
  factory: (root: string) => SandboxBackend | Promise<SandboxBackend>,
): void {
  describe(`sandbox escapes through collection: ${name}`, () => {
    let root: string;
    let backend: SandboxBackend;
    let racer: Buffer;
    let secretDir: string;
    let secretFile: string;
    const marker = `svc-marker-${randomBytes(16).toString('hex')}`;
    const created: Sandbox[] = [];
    let broker: Server | null = null;

    const spec = (): SandboxSpec =>
      testSpec('esc', join(root, 'broker.sock'), { cpus: 1, memoryMb: 256, pidsLimit: 64, diskMb: 256 });
    const make = async (): Promise<Sandbox> => {
      const s = await backend.create(spec());
      created.push(s);
      return s;
    };
    const sh = (box: Sandbox, script: string) => box.exec({ cmd: ['sh', '-c', script], timeoutMs: 20_000 });
    const text = (b: Buffer) => b.toString('utf8');
    const leaks = (b: Buffer | null | undefined) => b !== null && b !== undefined && b.includes(marker);
    /**
     * Rounds of collection against a racer: up to 300, or as many as fit in 6 s and at least 5 (an engine archive
     * costs about 0.6 s on a busy machine, whether a racer runs or not).
     * A collection may fail when the race cuts it (the engine ends an archive whose file changed under it): refusing
     * is safe, only the marker must never come back. Answers how many rounds ran.
     * `seen` (the plain content was collected once: the race was real) keeps the rounds going for up to 60 s more
     * until it holds: on a slow engine the first few rounds can all land while the link is in place.
     */
    const rounds = async (body: (i: number) => Promise<void>, seen?: () => boolean): Promise<{ rounds: number }> => {
      const until = Date.now() + 6000;
      const longest = Date.now() + 66_000;
      const more = () => Date.now() < until || (seen !== undefined && !seen() && Date.now() < longest);
      let i = 0;
      for (; i < 300 && (i < 5 || more()); i++) await body(i);
      return { rounds: i };
    };
    const dirOf = (box: Sandbox, path: string, failed: { n: number }) =>
      box.readDir(path, 1_000_000).catch(() => {
        failed.n++;
        return { files: [], truncated: false };
      });

    /** Starts the racer in the background and waits until it has made both names and swaps them. */
    const race = async (
      box: Sandbox,
      mode: 'file' | 'dir',
      target: string,
    ): Promise<{ running: Promise<ExecResult>; output: () => string }> => {
      await box.putFiles([{ path: '/workspace/racer', content: racer, mode: 0o755 }]);
      let seen = '';
      const running = box.exec({
        cmd: ['/workspace/racer', mode, '/svc/outputs', target],
        timeoutMs: 120_000,
        onOutput: (c) => (seen += text(c)),
      });
      await waitFor('the racer to start', () => seen.includes('racing'));
      return { running, output: () => seen };
    };

    before(async () => {
      root = mkdtempSync(join(tmpdir(), `svc-escapes-${name}-`));
      chmodSync(root, 0o711);
      // Both backends mount the broker's socket; these tests never call it, so nothing answers on it.
      const listening = createServer((c) => c.destroy());
      await new Promise<void>((resolve, reject) =>
        listening.once('error', reject).listen(join(root, 'broker.sock'), resolve),
      );
      broker = listening;
      chmodSync(join(root, 'broker.sock'), 0o666);
      // The racer is C built here, statically: a sandbox root may have neither a compiler nor python.
      const build = mkdtempSync(join(tmpdir(), 'svc-racer-'));
      try {
        writeFileSync(join(build, 'racer.c'), racerSource);
        try {
          execFileSync('cc', ['-static', '-O2', '-o', join(build, 'racer'), join(build, 'racer.c')], { stdio: 'pipe' });
        } catch (err) {
          throw new Error(
            `!!! these escape tests need a C compiler with static libc (cc -static), as npm run build does: ${errorMessage(err)}`,
          );
        }
        racer = readFileSync(join(build, 'racer'));
      } finally {
        rmSync(build, { recursive: true, force: true });
      }
      secretDir = mkdtempSync(join(tmpdir(), 'svc-secret-'));
      chmodSync(secretDir, 0o700);
      secretFile = join(secretDir, 'master.key');
      writeFileSync(join(secretDir, 'f.txt'), `${marker}\n`, { mode: 0o600 });
      writeFileSync(secretFile, `${marker}\n`, { mode: 0o600 });
      mkdirSync(join(secretDir, 'sub'));
      writeFileSync(join(secretDir, 'sub', 'f.txt'), `${marker}\n`, { mode: 0o600 });
      backend = await factory(root);
      await backend.prepare();
    });

    after(async () => {
      for (const s of created) await s.destroy().catch(() => undefined);
      await new Promise<void>((resolve) => (broker ? broker.close(() => resolve()) : resolve()));
      if (root) rmSync(root, { recursive: true, force: true });
      if (secretDir) rmSync(secretDir, { recursive: true, force: true });
    });

    it('a racer swapping a regular file with a link to a host file never gets the host file collected', async () => {
      const box = await make();
      const { running, output } = await race(box, 'file', secretFile);
      let files = 0;
      let plain = 0;
      const failed = { n: 0 };
      const done = await rounds(
        async (i) => {
          const dir = await dirOf(box, '/svc/outputs', failed);
          files += dir.files.length;
          for (const f of dir.files)
            assert.ok(!leaks(f.content), `round ${i}: readDir returned the host file as ${f.name}`);
          const one = await box.readFile('/svc/outputs/real', 1_000_000).catch(() => null);
          assert.ok(!leaks(one), `round ${i}: readFile returned the host file`);
          if (one?.toString('utf8') === 'plain\n') plain++;
          const other = await box.readFile('/svc/outputs/link', 1_000_000).catch(() => null);
          assert.ok(!leaks(other), `round ${i}: readFile of the other name returned the host file`);
          if (other?.toString('utf8') === 'plain\n') plain++;
        },
        () => files + plain > 0,
      );
      console.log(
        `[escapes ${name}] file swap: ${done.rounds} rounds, ${files} files listed, ${plain} plain reads, ${failed.n} listings refused, marker never seen`,
      );
      assert.ok(files + plain > 0, 'the race was real: the plain file was collected at least once');
      await box.stopProcesses();
      const ended = await running;
      assert.notEqual(ended.exitCode, 0, `the racer was killed, not finished: ${output()}`);
    });

    it('a racer swapping a directory with a link to a host directory never gets its files collected', async () => {
      const box = await make();
      const { running } = await race(box, 'dir', secretDir);
      let plain = 0;
      const failed = { n: 0 };
      const done = await rounds(
        async (i) => {
          const dir = await dirOf(box, '/svc/outputs', failed);
          for (const f of dir.files)
            assert.ok(!leaks(f.content), `round ${i}: readDir returned the host file as ${f.name}`);
          plain += dir.files.filter((f) => f.content.toString('utf8') === 'plain\n').length;
          for (const path of ['/svc/outputs/real/f.txt', '/svc/outputs/link/f.txt', '/svc/outputs/real/sub/f.txt']) {
            const one = await box.readFile(path, 1_000_000).catch(() => null);
            assert.ok(!leaks(one), `round ${i}: readFile(${path}) returned the host file`);
          }
          const sub = await dirOf(box, '/svc/outputs/link', failed);
          for (const f of sub.files)
            assert.ok(!leaks(f.content), `round ${i}: readDir of the swapped directory returned ${f.name}`);
        },
        () => plain > 0,
      );
      console.log(
        `[escapes ${name}] directory swap: ${done.rounds} rounds, ${plain} plain files collected, ${failed.n} listings refused, marker never seen`,
      );
      assert.ok(plain > 0, 'the race was real: the plain directory was collected at least once');
      await box.stopProcesses();
      await running;
    });

    it('static links to host files and directories are never followed, as the last or an intermediate component', async () => {
      const box = await make();
      const made = await sh(
        box,
        [
          'cd /svc/outputs',
          `ln -s '${secretFile}' file-link`,
          `ln -s '${secretDir}' dir-link`,
          'mkdir -p real/inner',
          `ln -s '${secretDir}' real/inner/dir-link`,
          'printf ok > real/ok.txt',
          `ln -s '${secretDir}' /svc/outputs-link`,
          'echo made',
        ].join(' && '),
      );
      assert.equal(text(made.output).trim(), 'made', text(made.output));
      const all = await box.readDir('/svc/outputs', 1_000_000);
      assert.deepEqual(
        all.files.map((f) => [f.name, f.content.toString('utf8')]),
        [['real/ok.txt', 'ok']],
      );
      for (const path of [
        '/svc/outputs/file-link',
        '/svc/outputs/dir-link/f.txt',
        '/svc/outputs/dir-link/sub/f.txt',
        '/svc/outputs/real/inner/dir-link/f.txt',
        '/svc/outputs-link/f.txt',
      ]) {
        const read = await box.readFile(path, 1_000_000).catch(() => null);
        assert.ok(!leaks(read), `readFile(${path}) returned the host file`);
      }
      for (const path of ['/svc/outputs/dir-link', '/svc/outputs/real/inner/dir-link', '/svc/outputs-link']) {
        const listed = await box.readDir(path, 1_000_000).catch(() => ({ files: [] }));
        assert.deepEqual(
          listed.files.map((f) => f.name),
          [],
          `readDir(${path}) listed the host directory`,
        );
      }
    });

    it('writes never go through a link, even one swapped in while the host writes', async () => {
      const box = await make();
      const victimDir = mkdtempSync(join(root, 'victim-'));
      chmodSync(victimDir, 0o700);
      const victim = join(victimDir, 'f.txt');
      writeFileSync(victim, 'untouched', { mode: 0o600 });
      const { running } = await race(box, 'dir', victimDir);
      await rounds(async () => {
        await box
          .putFiles([
            { path: '/svc/outputs/real/f.txt', content: 'overwritten' },
            { path: '/svc/outputs/link/new.txt', content: 'planted' },
          ])
          .catch(() => undefined);
      });
      await box.stopProcesses();
      await running;
      assert.equal(readFileSync(victim, 'utf8'), 'untouched');
      assert.deepEqual(readdirSync(victimDir), ['f.txt']);
    });

    it('a FIFO among the outputs does not hang collection', async () => {
      const box = await make();
      const made = await sh(box, 'cd /svc/outputs && mkfifo fifo && printf x > x.txt && echo made');
      assert.equal(text(made.output).trim(), 'made', text(made.output));
      const t0 = Date.now();
      const all = await box.readDir('/svc/outputs', 1_000_000);
      assert.deepEqual(
        all.files.map((f) => f.name),
        ['x.txt'],
      );
      await assert.rejects(box.readFile('/svc/outputs/fifo', 100));
      assert.ok(Date.now() - t0 < 5000, `collection took ${Date.now() - t0} ms`);
    });

    it('stopProcesses kills every process of the sandbox, leaves its files readable and refuses new commands', async () => {
      const box = await make();
      const procName = `esc-bg-${randomUUID().slice(0, 8)}`;
      // A command that leaves a detached process behind, and one still running, both writing into the outputs.
      const writer = `(setsid bash -c 'exec -a ${procName} sh -c "while :; do date +%s%N > /svc/outputs/tick; done"' </dev/null >/dev/null 2>&1 &)`;
      const bg = await sh(box, `${writer} ; printf kept > /svc/outputs/kept.txt; echo started`);
      assert.equal(text(bg.output).trim(), 'started');
      let stillOut = '';
      const still = box.exec({
        cmd: ['sh', '-c', `${writer} ; echo started; while :; do sleep 1; done`],
        timeoutMs: 120_000,
        onOutput: (c) => (stillOut += text(c)),
      });
      await waitFor('the second command to start', () => stillOut.includes('started'));
      const tick = async () => {
        const b = await box.readFile('/svc/outputs/tick', 1000);
        return b === null ? null : text(b);
      };
      // Without a live writer the checks below would pass vacuously. On bwrap the detached writer of the first command
      // ends with it (each command has its own pid namespace), so there the running command's writer is the one to stop.
      await waitFor('a writer to write into the outputs', async () => (await tick()) !== null);
      const t0 = Date.now();
      await box.stopProcesses();
      const ms = Date.now() - t0;
      const ended = await still;
      assert.equal(ended.timedOut, false);
      const first = await tick();
      // Only an absence shows that a writer is gone: one would rewrite the file continuously, so 300 ms without a
      // change is thousands of writes that did not happen.
      await staysFalse('a write into the sandbox after stopProcesses', async () => (await tick()) !== first, 300);
      assert.deepEqual(hostProcessesNamed(procName), [], 'no process of the sandbox survives stopProcesses');
      assert.equal(text((await box.readFile('/svc/outputs/kept.txt', 100))!), 'kept');
      await assert.rejects(box.exec({ cmd: ['true'] }), /stopped/);
      await box.stopProcesses();
      console.log(`[escapes ${name}] stopProcesses with two live process trees: ${ms} ms`);
    });
  });
}

/**
 * `racer MODE DIR TARGET`: in DIR, makes `real` (a file, or with MODE dir a directory holding f.txt and sub/f.txt)
 * and `link` (a symbolic link to TARGET), says "racing", then exchanges the two names atomically forever.
 */
const racerSource = String.raw`
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
static int put(const char *path) {
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "plain\n", 6) != 6) return -1;
  return close(fd);
}
int main(int argc, char **argv) {
  if (argc != 4 || chdir(argv[2]) != 0) return 2;
  if (strcmp(argv[1], "dir") == 0) {
    if (mkdir("real", 0755) != 0 || put("real/f.txt") != 0 || mkdir("real/sub", 0755) != 0 || put("real/sub/f.txt") != 0) return 3;
  } else if (put("real") != 0) return 3;
  if (symlink(argv[3], "link") != 0) return 4;
  printf("racing\n");
  fflush(stdout);
  for (;;) syscall(SYS_renameat2, AT_FDCWD, "real", AT_FDCWD, "link", RENAME_EXCHANGE);
}
`;
