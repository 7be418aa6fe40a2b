import type { Readable } from 'node:stream';
/**
 * The sandbox port: one interface, two real backends (bwrap, docker), one conformance suite (tests/sandbox).
 * Paths inside a sandbox follow docs/sandbox.md: /workspace, /svc, /svc/outputs, /svc/logs, /usr/local/bin/svc.
 */

export type NetworkMode = 'none' | 'internet' | 'allowlist';
export type SandboxUser = 'agent' | 'root' | 'mcp';

/** Fixed loopback ports inside every sandbox that `svc init` forwards to the host's Unix sockets. */
export const brokerPort = 4180;
export const proxyPort = 4181;

export interface SandboxLimits {
  cpus: number;
  memoryMb: number;
  pidsLimit: number;
  /** /workspace, /svc and /tmp together; writing past it fails with ENOSPC inside (docs/design.md, "Sandbox isolation"). */
  diskMb: number;
}

export interface SandboxSpec {
  /** Unique id; also names the host directory and the container. */
  id: string;
  /** Labels for orphan reaping and listing (run, job, workspace ids). */
  labels: { runId?: string; jobId?: string; workspaceId?: string };
  /** Docker image; bwrap uses the host's /usr (or a prepared root) and ignores it. Null: the backend default. */
  image: string | null;
  limits: SandboxLimits;
  network: NetworkMode;
  /** Commands run as root (uid 0, or a user-namespace root on bwrap) instead of the agent (uid 1000). */
  runAsRoot: boolean;
  /** Environment of every exec (job secrets, SVC_* variables). Exec options may add more. */
  env: Record<string, string>;
  /** Host path of the broker's Unix socket, mounted at /run/svc/broker.sock. */
  brokerSocket: string;
  /** Host path of the egress proxy's Unix socket, mounted at /run/svc/proxy.sock; null when the job has no proxy. */
  proxySocket: string | null;
  /** After this, the reaper may destroy the sandbox whatever its run says. */
  ttlMs: number;
  /**
   * Its first exec streams stdin (a stdio MCP server being tested): a sandbox started ahead could not run it and would
   * be killed unused, so bwrap neither takes nor starts one for it (docs/design.md, "Sandbox provisioning").
   */
  firstExecStreams?: boolean;
}

export interface ExecOptions {
  /** argv; the first element is looked up on PATH inside the sandbox. */
  cmd: string[];
  /** Default: the spec's user (agent, or root with runAsRoot). */
  user?: SandboxUser;
  /** Default /workspace. */
  cwd?: string;
  env?: Record<string, string>;
  /** Kills the whole process tree (TERM, then KILL 1.5 s later) and reports `timedOut`; the sandbox stays usable. */
  timeoutMs?: number;
  /** Aborting kills the process tree like a timeout and reports `cancelled`. */
  signal?: AbortSignal;
  /**
   * The command's stdin: bytes written then closed, or a stream piped while the command runs (closed when the stream
   * ends; a stdio MCP server gets its messages this way). Default: /dev/null.
   */
  stdin?: string | Buffer | Readable;
  /** Live combined stdout+stderr, in arrival order. */
  onOutput?: (chunk: Buffer) => void;
  /** Keep at most this many bytes of output in the result (default 8 MiB); `bytes` still counts everything. */
  maxOutputBytes?: number;
}

export interface ExecResult {
  /** Exit status; 128+N when killed by signal N; -1 when the command could not start. */
  exitCode: number;
  /** Combined stdout+stderr (first `maxOutputBytes`). */
  output: Buffer;
  bytes: number;
  timedOut: boolean;
  cancelled: boolean;
  oomKilled: boolean;
  ms: number;
}

export interface FileIn {
  /** Absolute path inside the sandbox (under /workspace, /svc or /tmp). */
  path: string;
  content: string | Buffer;
  /** Default 0o644. */
  mode?: number;
  /** Default: the agent user (uid 1000). Backends without separate users (bwrap: capabilities.separateUsers false) give every file to the agent. */
  owner?: SandboxUser;
}

export interface FileOut {
  /** Path relative to the directory that was read. */
  name: string;
  size: number;
  content: Buffer;
}

export interface Sandbox {
  readonly id: string;
  exec(options: ExecOptions): Promise<ExecResult>;
  /** Creates parent directories; sets mode and owner. */
  putFiles(files: FileIn[]): Promise<void>;
  /** Null when the file does not exist; throws when it is larger than maxBytes. */
  readFile(path: string, maxBytes: number): Promise<Buffer | null>;
  /**
   * Regular files below `dir` (recursively, symlinks not followed), in path order, until their total size would pass
   * `maxTotalBytes`: the rest are left out and `truncated` is set.
   */
  readDir(dir: string, maxTotalBytes: number): Promise<{ files: FileOut[]; truncated: boolean }>;
  /**
   * Kills every process of the sandbox (commands, what they left in the background, stdio MCP servers) and resolves
   * once none is left; its files stay readable and exec refuses from then on. Idempotent. Called before anything is
   * read back, so nothing in the sandbox can change its files while the host reads them (docs/security.md).
   */
  stopProcesses(): Promise<void>;
  /** Idempotent: kills every process and removes the sandbox's resources. */
  destroy(): Promise<void>;
}

export interface LimitSet {
  cpu: boolean;
  memory: boolean;
  pids: boolean;
}

/** The backend and what it can do, as GET /api/system/info reports them. */
export interface SandboxInfo {
  backend: 'bwrap' | 'docker';
  version: string;
  arch: string;
  isolation: 'namespaces' | 'container';
  capabilities: {
    networks: NetworkMode[];
    separateUsers: boolean;
    limits: LimitSet;
  };
  imageBuilds: boolean;
}

export interface ImageBuildRequest {
  /** The whole build context: nothing but this Dockerfile is sent. */
  dockerfile: string;
  tag: string;
  labels: Record<string, string>;
  /** Aborting stops the build; the engine removes its intermediate containers. */
  signal: AbortSignal;
  /** Build output as it arrives. */
  onLog(text: string): void;
}

/** Job image builds (docs/design.md, "Images"): only a backend whose `imageBuilds` is true has them. */
export interface ImageBuilds {
  /** Builds and tags; throws with the engine's message when the build fails. Answers the engine's image id and size. */
  build(request: ImageBuildRequest): Promise<{ id: string; sizeBytes: number }>;
  /** The digest (`sha256:…`) a base image reference stands for now; throws when it cannot be told. */
  resolveDigest(image: string, signal: AbortSignal): Promise<string>;
  exists(ref: string): Promise<boolean>;
  /** Idempotent. */
  remove(ref: string): Promise<void>;
  /** The job image tags this service instance built that the engine still holds. */
  tags(): Promise<string[]>;
}

export interface SandboxBackend {
  readonly kind: 'bwrap' | 'docker';
  /** Present when the backend builds images from Dockerfiles. */
  readonly images?: ImageBuilds;
  /** Checks prerequisites once (binaries, engine, cgroups, base image); throws with a clear message when unusable. */
  prepare(): Promise<void>;
  info(): SandboxInfo;
  create(spec: SandboxSpec): Promise<Sandbox>;
  /** Ids of this instance's sandboxes that exist now, with their labels and creation time. */
  list(): Promise<Array<{ id: string; labels: SandboxSpec['labels']; createdAt: number; expiresAt: number }>>;
  /** Idempotent destroy by id (for the reaper and for sandboxes of a crashed process). */
  destroy(id: string): Promise<void>;
  /** Ends what the backend keeps ahead of use (bwrap's ready sandboxes) when the service stops; created ones stay. */
  close?(): Promise<void>;
  /**
   * Starts sandboxes with a `sizeMb` disk ahead of any run asking for one (bwrap: docs/design.md, "Sandbox
   * provisioning"); a backend without such sandboxes has none.
   */
  warm?(sizeMb: number): void;
}
