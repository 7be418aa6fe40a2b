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
  /**
   * Several workspaces per instance (personal workspaces, invites, switching); off, everyone shares Default
   * (docs/design.md, "Identity"). SVC_WORKSPACES_ENABLED=true.
   */
  workspacesEnabled: boolean;
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
  return {
    host,
    port,
    dataDir: resolve(flags.dataDir ?? env.SVC_DATA_DIR ?? './data'),
    publicUrl: (env.SVC_PUBLIC_URL ?? '').replace(/\/+$/, ''),
    eventStoreUrl: env.SVC_EVENTSTORE_URL || null,
    mongoUrl: env.SVC_MONGO_URL || null,
    masterKey: env.SVC_MASTER_KEY,
    roles,
    logLevel: env.SVC_LOG_LEVEL ?? (env.NODE_ENV === 'test' ? 'warn' : 'info'),
    sandbox: {
      backend: env.SVC_SANDBOX || 'bwrap',
      dockerHost: env.SVC_DOCKER_HOST || undefined,
      image: env.SVC_SANDBOX_IMAGE || undefined,
    },
    workspacesEnabled: env.SVC_WORKSPACES_ENABLED === 'true',
  };
}
