import { resolve } from 'node:path';

export type Role = 'api' | 'projector' | 'scheduler' | 'runner';
export const allRoles: Role[] = ['api', 'projector', 'scheduler', 'runner'];

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** Where people and `svc` links reach the service; defaults to the listen address. */
  publicUrl: string;
  eventStoreUrl: string | null;
  mongoUrl: string | null;
  masterKey: string | undefined;
  roles: Set<Role>;
  logLevel: string;
  /** SVC_SANDBOX, SVC_DOCKER_HOST, SVC_SANDBOX_IMAGE: names that operators and outside tests rely on, kept stable. */
  sandbox: { backend: string; dockerHost: string | undefined; image: string | undefined };
}

/** A configuration the service refuses to start with; the message says what to set, and is all an operator sees. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export interface ServeFlags {
  host?: string;
  port?: number;
  dataDir?: string;
  roles?: string;
}

export function loadConfig(flags: ServeFlags, env: NodeJS.ProcessEnv = process.env): Config {
  const host = flags.host ?? env.SVC_HOST ?? '127.0.0.1';
  const port = flags.port ?? (env.SVC_PORT ? Number(env.SVC_PORT) : 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid port: ${String(port)}`);
  const roles = new Set<Role>();
  for (const r of (flags.roles ?? env.SVC_ROLES ?? allRoles.join(',')).split(',')) {
    const role = r.trim() as Role;
    if (!allRoles.includes(role)) throw new Error(`unknown role "${r}" (roles: ${allRoles.join(', ')})`);
    roles.add(role);
  }
  const eventStoreUrl = env.SVC_EVENTSTORE_URL || null;
  const mongoUrl = env.SVC_MONGO_URL || null;
  // Replicas of a scaled deployment share no disk: a key file generated in one data directory would leave every other
  // replica unable to open secrets or check cookies (docs/design.md, "Identity").
  if ((eventStoreUrl || mongoUrl) && !env.SVC_MASTER_KEY?.trim()) {
    throw new ConfigError(
      'SVC_MASTER_KEY must be set when SVC_EVENTSTORE_URL or SVC_MONGO_URL is: every replica needs the same key, ' +
        'and a key file in one data directory is not shared (generate one with `openssl rand -base64 32`)',
    );
  }
  return {
    host,
    port,
    dataDir: resolve(flags.dataDir ?? env.SVC_DATA_DIR ?? './data'),
    publicUrl: (env.SVC_PUBLIC_URL ?? '').replace(/\/+$/, ''),
    eventStoreUrl,
    mongoUrl,
    masterKey: env.SVC_MASTER_KEY,
    roles,
    logLevel: env.SVC_LOG_LEVEL ?? (env.NODE_ENV === 'test' ? 'warn' : 'info'),
    sandbox: {
      backend: env.SVC_SANDBOX || 'bwrap',
      dockerHost: env.SVC_DOCKER_HOST || undefined,
      image: env.SVC_SANDBOX_IMAGE || undefined,
    },
  };
}
