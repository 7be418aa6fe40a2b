import Docker from 'dockerode';
import { readdirSync, readFileSync } from 'node:fs';
import { type Duplex, PassThrough, Readable } from 'node:stream';
import { posix } from 'node:path';
import { checkSandboxId } from './ids.js';
import { OutputCollector } from './output.js';
import { pack, readTar, type ReadEntry, type TarHeader } from './tar.js';
import type {
  ExecOptions,
  ExecResult,
  FileIn,
  ImageBuildRequest,
  ImageBuilds,
  Sandbox,
  SandboxBackend,
  SandboxInfo,
  SandboxSpec,
  SandboxUser,
} from './types.js';
import { errorMessage } from '../../domain/error-message.js';
import { ignoreFailure } from '../../domain/ignore-failure.js';

const uids: Record<SandboxUser, number> = { agent: 1000, root: 0, mcp: 1001 };
const writable = ['/workspace', '/svc', '/tmp'];

/** Every process below `pid` on this host (the exec's tree), children first found by walking /proc. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(name));
      children.set(ppid, list);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

function signalTree(pid: number, signal: NodeJS.Signals): void {
  for (const p of [pid, ...descendants(pid)]) {
    try {
      process.kill(p, signal);
    } catch {
      // already gone
    }
  }
}

/** `unix:///path`, a plain socket path, or tcp://host:port. */
export function dockerClient(host: string | undefined): Docker {
  if (!host) return new Docker();
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length) });
  if (host.startsWith('/')) return new Docker({ socketPath: host });
  const url = new URL(host.replace(/^tcp:/, 'http:'));
  return new Docker({ host: url.hostname, port: Number(url.port || 2375), protocol: 'http' });
}

/** Sandboxes as containers through the Docker Engine API (docs/design.md, "Sandbox isolation"): network none, all capabilities dropped. */
export class DockerBackend implements SandboxBackend {
  readonly kind = 'docker' as const;
  private version = 'unknown';
  private arch = 'amd64';

  constructor(
    private readonly docker: Docker,
    private readonly svcBinary: string,
    private readonly defaultImage: string,
    private readonly instance: string,
  ) {}

  private builds: DockerImages | null = null;

  get images(): ImageBuilds {
    return (this.builds ??= new DockerImages(this.docker, this.instance));
  }

  async prepare(): Promise<void> {
    const v = await this.docker.version();
    this.version = v.Version;
    this.arch = v.Arch;
    try {
      await this.docker.getImage(this.defaultImage).inspect();
    } catch {
      throw new Error(
        `the sandbox image ${this.defaultImage} is missing from the Docker engine (build it with scripts/prepare-host.sh)`,
      );
    }
  }

  info(): SandboxInfo {
    return {
      backend: 'docker',
      version: this.version,
      arch: this.arch,
      isolation: 'container',
      capabilities: {
        networks: ['none', 'allowlist', 'internet'],
        separateUsers: true,
        limits: { cpu: true, memory: true, pids: true },
      },
      imageBuilds: true,
    };
  }

  /**
   * The disk limit (docs/design.md, "Sandbox isolation"): /workspace, /svc and /tmp are size-limited tmpfs volumes of
   * the engine (a remote engine has no host path to give), and /var/tmp, the image's other world-writable directory,
   * a tmpfs mount. The engine unmounts a tmpfs volume, losing its files, when no running container uses it; a keeper
   * container holds them, so a sandbox whose processes were stopped still has its files to read back.
   */
  private async volumes(spec: SandboxSpec): Promise<Array<{ Type: 'volume'; Source: string; Target: string }>> {
    const size = `size=${spec.limits.diskMb}m`;
    const volumes = [
      { name: `svc-${spec.id}-workspace`, target: '/workspace', o: `${size},uid=1000,gid=1000,mode=0755` },
      { name: `svc-${spec.id}-svc`, target: '/svc', o: `${size},uid=1000,gid=1000,mode=0755` },
      { name: `svc-${spec.id}-tmp`, target: '/tmp', o: `${size},mode=1777` },
    ];
    const labels = { 'svc.disk-of': this.instance };
    await Promise.all(
      volumes.map((v) =>
        this.docker.createVolume({
          Name: v.name,
          Driver: 'local',
          DriverOpts: { type: 'tmpfs', device: 'tmpfs', o: v.o },
          Labels: labels,
        }),
      ),
    );
    return volumes.map((v) => ({ Type: 'volume' as const, Source: v.name, Target: v.target }));
  }

  /** Starts the keeper of the volumes; it must run before anything is written into them. */
  private async keep(
    spec: SandboxSpec,
    ttl: string,
    mounts: Array<{ Type: 'volume'; Source: string; Target: string }>,
  ): Promise<void> {
    const keeper = await this.docker.createContainer({
      name: `svc-${spec.id}-disk`,
      Image: this.defaultImage,
      Entrypoint: ['/usr/local/bin/svc', 'init', '--ttl', ttl],
      Cmd: [],
      User: '65534:65534',
      Labels: { 'svc.disk-of': this.instance },
      NetworkDisabled: true,
      HostConfig: {
        NetworkMode: 'none',
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Memory: 32 * 1024 * 1024,
        PidsLimit: 4,
        Binds: [`${this.svcBinary}:/usr/local/bin/svc:ro`],
        Mounts: mounts,
        RestartPolicy: { Name: 'no' },
      },
    });
    await keeper.start();
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    checkSandboxId(spec.id);
    try {
      return await this.createOrThrow(spec);
    } catch (err) {
      // Nothing half-made is left: the keeper and the volumes of a sandbox that did not start go with it.
      await removeSandbox(this.docker, spec.id).catch(
        ignoreFailure("the create error is the caller's; a part left over stops itself when its `svc init --ttl` ends"),
      );
      throw err;
    }
  }

  private async createOrThrow(spec: SandboxSpec): Promise<Sandbox> {
    const now = Date.now();
    const binds = [`${this.svcBinary}:/usr/local/bin/svc:ro`, `${spec.brokerSocket}:/run/svc/broker.sock`];
    if (spec.proxySocket) binds.push(`${spec.proxySocket}:/run/svc/proxy.sock`);
    const labels: Record<string, string> = {
      'svc.instance': this.instance,
      'svc.created': String(now),
      'svc.expires': String(now + spec.ttlMs),
    };
    for (const [k, v] of Object.entries(spec.labels)) if (v) labels[`svc.${k.replace(/Id$/, '')}`] = v;
    const ttl = String(Math.ceil(spec.ttlMs / 1000));
    const mounts = await this.volumes(spec);
    // A tmpfs's pages are charged to the memory of the container that writes them: the memory limit leaves room for
    // a full disk, so filling it ends in ENOSPC and not in the OOM killer.
    const memory = (spec.limits.memoryMb + spec.limits.diskMb) * 1024 * 1024;
    const [container] = await Promise.all([
      this.docker.createContainer({
        name: `svc-${spec.id}`,
        Image: spec.image ?? this.defaultImage,
        Entrypoint: ['/usr/local/bin/svc', 'init', '--ttl', ttl],
        Cmd: [],
        User: '0:0',
        WorkingDir: '/workspace',
        Labels: labels,
        // Not the engine's host name or resolver: the image's /etc and a resolver that answers nothing (network none).
        Hostname: 'svc',
        NetworkDisabled: true,
        HostConfig: {
          NetworkMode: 'none',
          Dns: ['127.0.0.1'],
          DnsSearch: ['.'],
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          NanoCpus: Math.round(spec.limits.cpus * 1e9),
          Memory: memory,
          MemorySwap: memory,
          PidsLimit: spec.limits.pidsLimit,
          Binds: binds,
          Mounts: mounts,
          Tmpfs: { '/var/tmp': `rw,nosuid,nodev,size=${Math.min(spec.limits.diskMb, 64)}m` },
          RestartPolicy: { Name: 'no' },
        },
      }),
      this.keep(spec, ttl, mounts),
    ]);
    // The layout of docs/sandbox.md, owned by the agent, before the first process starts.
    const dirs = ['workspace', 'svc', 'svc/outputs', 'svc/logs', 'svc/candidates'].map((name) => ({
      name,
      type: 'dir' as const,
      mode: 0o755,
      uid: 1000,
      gid: 1000,
    }));
    await container.putArchive(pack(dirs), { path: '/' });
    await container.start();
    return new DockerSandbox(spec, container, () => removeSandbox(this.docker, spec.id));
  }

  async list() {
    const found = await this.docker.listContainers({
      all: true,
      filters: { label: [`svc.instance=${this.instance}`] },
    });
    return found.map((c) => ({
      id: (c.Names[0] ?? '').replace(/^\/svc-/, ''),
      labels: { runId: c.Labels['svc.run'], jobId: c.Labels['svc.job'], workspaceId: c.Labels['svc.workspace'] },
      createdAt: Number(c.Labels['svc.created'] ?? c.Created * 1000),
      expiresAt: Number(c.Labels['svc.expires'] ?? 0),
    }));
  }

  async destroy(id: string): Promise<void> {
    checkSandboxId(id);
    await removeSandbox(this.docker, id);
  }
}

/** The container, its disk keeper and its volumes; idempotent. */
async function removeSandbox(docker: Docker, id: string): Promise<void> {
  const gone = (err: unknown) => {
    if ((err as { statusCode?: number }).statusCode !== 404) throw err;
  };
  await Promise.all(
    [`svc-${id}`, `svc-${id}-disk`].map((name) => docker.getContainer(name).remove({ force: true }).catch(gone)),
  );
  await Promise.all(
    ['workspace', 'svc', 'tmp'].map((sub) => docker.getVolume(`svc-${id}-${sub}`).remove().catch(gone)),
  );
}

/** One line of the engine's build progress stream. */
interface BuildMessage {
  stream?: string;
  status?: string;
  progress?: string;
  error?: string;
  errorDetail?: { message?: string };
  aux?: { ID?: string };
}

const isNotFound = (err: unknown) => (err as { statusCode?: number }).statusCode === 404;

/** Job images through the engine's builder; the build context is a tar holding only the Dockerfile. */
class DockerImages implements ImageBuilds {
  constructor(
    private readonly docker: Docker,
    private readonly instance: string,
  ) {}

  async build(request: ImageBuildRequest): Promise<{ id: string; sizeBytes: number }> {
    const context = pack([
      { name: 'Dockerfile', type: 'file', mode: 0o644, uid: 0, gid: 0, content: Buffer.from(request.dockerfile) },
    ]);
    let error: string | null = null;
    try {
      const stream = await this.docker.buildImage(Readable.from([context]), {
        t: request.tag,
        dockerfile: 'Dockerfile',
        rm: true,
        forcerm: true,
        labels: { ...request.labels, 'svc.instance': this.instance },
        abortSignal: request.signal,
      });
      let rest = '';
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        rest += chunk.toString('utf8');
        for (let cut = rest.indexOf('\n'); cut >= 0; cut = rest.indexOf('\n')) {
          const line = rest.slice(0, cut).trim();
          rest = rest.slice(cut + 1);
          if (line === '') continue;
          let message: BuildMessage;
          try {
            message = JSON.parse(line) as BuildMessage;
          } catch {
            request.onLog(`${line}\n`);
            continue;
          }
          if (message.stream) request.onLog(message.stream);
          else if (message.status)
            request.onLog(`${message.status}${message.progress ? ` ${message.progress}` : ''}\n`);
          // The engine reports a failed step in the stream and still answers 200.
          if (message.error) error = message.errorDetail?.message ?? message.error;
        }
      }
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason;
      throw err;
    }
    if (request.signal.aborted) throw request.signal.reason;
    if (error) throw new Error(error);
    const info = await this.docker.getImage(request.tag).inspect();
    return { id: info.Id, sizeBytes: info.Size };
  }

  async resolveDigest(image: string, signal: AbortSignal): Promise<string> {
    try {
      const found = await this.docker
        .getImage(image)
        .distribution({ abortSignal: AbortSignal.any([signal, AbortSignal.timeout(20_000)]) });
      return found.Descriptor.digest;
    } catch (err) {
      // No registry answer: an image pulled earlier still knows the digest it came with.
      const local = await this.docker
        .getImage(image)
        .inspect()
        .catch(() => null);
      const digest = local?.RepoDigests?.[0]?.split('@')[1];
      if (digest) return digest;
      throw new Error((err as { json?: { message?: string } }).json?.message ?? errorMessage(err));
    }
  }

  async exists(ref: string): Promise<boolean> {
    try {
      await this.docker.getImage(ref).inspect();
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  async remove(ref: string): Promise<void> {
    try {
      await this.docker.getImage(ref).remove();
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async tags(): Promise<string[]> {
    const images = await this.docker.listImages({ filters: { label: [`svc.instance=${this.instance}`] } });
    return images.flatMap((i) => i.RepoTags ?? []).filter((t) => t !== '<none>:<none>');
  }
}

class DockerSandbox implements Sandbox {
  private oomKillsSeen = 0;
  private stopped = false;

  constructor(
    private readonly spec: SandboxSpec,
    private readonly container: Docker.Container,
    /** Removes the disk keeper and the volumes once the container is gone. */
    private readonly removeDisks: () => Promise<void>,
  ) {}

  get id(): string {
    return this.spec.id;
  }

  async exec(options: ExecOptions): Promise<ExecResult> {
    if (this.stopped) throw new Error("the sandbox's processes were stopped: it runs nothing more");
    const started = Date.now();
    const user = options.user ?? (this.spec.runAsRoot ? 'root' : 'agent');
    const env = {
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: user === 'root' ? '/root' : '/workspace',
      ...this.spec.env,
      ...(options.env ?? {}),
    };
    const { exec, stream } = await this.startExec({
      Cmd: options.cmd,
      User: `${uids[user]}:${uids[user]}`,
      WorkingDir: options.cwd ?? '/workspace',
      Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      AttachStdout: true,
      AttachStderr: true,
      AttachStdin: options.stdin !== undefined,
    });
    const out = new OutputCollector(options.maxOutputBytes, options.onOutput);
    const sink = new PassThrough();
    sink.on('data', out.push);
    this.container.modem.demuxStream(stream, sink, sink);
    const input = stream as unknown as { write(c: Buffer | string): void; end(): void };
    if (options.stdin instanceof Readable) {
      options.stdin.on('data', (c: Buffer | string) => input.write(c));
      options.stdin.on('end', () => input.end());
    } else if (options.stdin !== undefined) {
      input.write(options.stdin);
      input.end();
    }
    let timedOut = false;
    let cancelled = false;
    let hostPid = 0;
    let ended = false;
    const stop = async () => {
      // The process may not be started yet when a cancel arrives: wait for its pid, however slow the engine is.
      for (const giveUp = Date.now() + 30_000; !hostPid && !ended && Date.now() < giveUp;) {
        hostPid = (await exec.inspect()).Pid;
        if (!hostPid) await new Promise((r) => setTimeout(r, 20));
      }
      if (!hostPid) return;
      signalTree(hostPid, 'SIGTERM');
      setTimeout(() => signalTree(hostPid, 'SIGKILL'), 1500).unref();
    };
    const nothingToStop = ignoreFailure(
      'an inspect that fails means the exec (or its container) is gone: nothing to stop',
    );
    const timer = options.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          void stop().catch(nothingToStop);
        }, options.timeoutMs)
      : null;
    const onAbort = () => {
      cancelled = true;
      void stop().catch(nothingToStop);
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    await new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    ended = true;
    if (timer) clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    const info = await exec.inspect();
    let exitCode = info.ExitCode ?? -1;
    // The engine answers 126 when the runtime cannot find the program; a shell says 127, and so does bwrap.
    if (exitCode === 126 && /executable file not found/.test(out.output.toString('utf8'))) exitCode = 127;
    const oomKilled = exitCode === 137 && (await this.oomKillsSinceLastLook().catch(() => false));
    return { exitCode, output: out.output, bytes: out.bytes, timedOut, cancelled, oomKilled, ms: Date.now() - started };
  }

  /**
   * The container's State.OOMKilled speaks only of its init; an exec killed by the kernel shows in the memory cgroup's
   * oom_kill count (cgroup v1, mounted as the container's own in /sys/fs/cgroup/memory).
   */
  private async oomKillsSinceLastLook(): Promise<boolean> {
    const exec = await this.container.exec({
      Cmd: ['cat', '/sys/fs/cgroup/memory/memory.oom_control'],
      User: '0:0',
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = await exec.start({ hijack: true, stdin: false });
    const sink = new PassThrough();
    const chunks: Buffer[] = [];
    sink.on('data', (c: Buffer) => chunks.push(c));
    this.container.modem.demuxStream(stream, sink, sink);
    await new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    const count = Number(/oom_kill (\d+)/.exec(Buffer.concat(chunks).toString('utf8'))?.[1] ?? 0);
    const fresh = count > this.oomKillsSeen;
    this.oomKillsSeen = count;
    return fresh;
  }

  private check(path: string): string {
    const clean = posix.normalize(path);
    if (!writable.some((w) => clean === w || clean.startsWith(`${w}/`)))
      throw new Error(`${path} is outside the sandbox's writable directories (${writable.join(', ')})`);
    return clean;
  }

  /**
   * Creates and starts an exec. Now and then the engine refuses to start a new exec of a running container with
   * "cannot start a stopped process" (seen once in CI, with the container's init alive): the process was marked
   * stopped before it was started, so the command never ran, and a new exec is tried, twice at most. A container
   * that is not running any more answers its own error.
   */
  private async startExec(options: Docker.ExecCreateOptions): Promise<{ exec: Docker.Exec; stream: Duplex }> {
    for (let attempt = 1; ; attempt++) {
      const exec = await this.container.exec(options);
      try {
        return { exec, stream: await exec.start({ hijack: true, stdin: options.AttachStdin === true }) };
      } catch (err) {
        const refused = /cannot start a stopped process/.test(errorMessage(err));
        if (!refused || attempt === 3) throw err;
        const running = await this.container.inspect().then(
          (c) => c.State.Running,
          () => false,
        );
        if (!running) throw new Error(`the sandbox's container stopped: ${errorMessage(err)}`);
        await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
  }

  async putFiles(files: FileIn[]): Promise<void> {
    const entries = [];
    const dirs = new Set<string>();
    for (const f of files) {
      const path = this.check(f.path).slice(1);
      const parts = path.split('/');
      for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
      const uid = uids[f.owner ?? 'agent'];
      entries.push({
        name: path,
        type: 'file' as const,
        mode: f.mode ?? 0o644,
        uid,
        gid: uid,
        content: Buffer.isBuffer(f.content) ? f.content : Buffer.from(f.content),
      });
    }
    const parents = [...dirs]
      .filter((d) => !['workspace', 'svc', 'tmp'].includes(d))
      .map((name) => ({ name, type: 'dir' as const, mode: 0o755, uid: 1000, gid: 1000 }));
    await this.container.putArchive(pack([...parents, ...entries]), { path: '/' });
  }

  /**
   * The engine's archive of `path`, read as a stream: links come as link entries and are never followed here, names
   * are checked, and only the content `keep` accepts is held (docs/security.md, "Reading back from sandboxes").
   * Null when the path does not exist.
   */
  private async archive(
    path: string,
    keep: (h: TarHeader) => boolean,
    maxStreamBytes: number,
  ): Promise<{ entries: ReadEntry[]; cut: boolean } | null> {
    let stream: NodeJS.ReadableStream;
    try {
      stream = await this.container.getArchive({ path });
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return null;
      throw err;
    }
    try {
      return await readTar(stream as AsyncIterable<Buffer>, { keep, maxStreamBytes });
    } finally {
      (stream as Readable).destroy?.();
    }
  }

  async readFile(path: string, maxBytes: number): Promise<Buffer | null> {
    const base = posix.basename(this.check(path));
    // One entry is expected, named for the path; a directory or a link is not a file to read.
    const read = await this.archive(
      this.check(path),
      (h) => h.name === base && h.size <= maxBytes,
      maxBytes + 1024 * 1024,
    );
    if (!read) return null;
    const entry = read.entries[0];
    if (!entry || entry.name !== base) throw new Error(`${path} could not be read from the sandbox`);
    if (entry.type === 'symlink') throw new Error(`${path} is a symbolic link`);
    if (entry.type !== 'file') throw new Error(`${path} is not a regular file`);
    if (entry.size > maxBytes || !entry.content)
      throw new Error(`${path} is ${entry.size} bytes, more than ${maxBytes}`);
    return entry.content;
  }

  async readDir(dir: string, maxTotalBytes: number) {
    let total = 0;
    let truncated = false;
    // The archive walks each directory in name order, depth first: the same path order bwrap reads in.
    const keep = (h: TarHeader) => {
      if (truncated || total + h.size > maxTotalBytes) {
        truncated = true;
        return false;
      }
      total += h.size;
      return true;
    };
    const read = await this.archive(this.check(dir), keep, 2 * maxTotalBytes + 64 * 1024 * 1024);
    if (!read) return { files: [], truncated: false };
    const files = read.entries
      .filter((e) => e.content !== null && e.name.includes('/'))
      .map((e) => ({ name: e.name.split('/').slice(1).join('/'), size: e.size, content: e.content! }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    return { files, truncated: truncated || read.cut };
  }

  /**
   * Kills the container's init, and with it every process of its pid namespace (commands, what they left running,
   * stdio MCP servers); a stopped container's files stay readable through the archive API.
   */
  async stopProcesses(): Promise<void> {
    this.stopped = true;
    try {
      await this.container.kill({ signal: 'SIGKILL' });
    } catch (err) {
      // 409: not running already.
      if ((err as { statusCode?: number }).statusCode !== 409) throw err;
    }
    const until = Date.now() + 20_000;
    while ((await this.container.inspect()).State.Running) {
      if (Date.now() > until) throw new Error(`the container of sandbox ${this.spec.id} still runs after SIGKILL`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async destroy(): Promise<void> {
    try {
      await this.container.remove({ force: true });
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) throw err;
    }
    await this.removeDisks();
  }
}
