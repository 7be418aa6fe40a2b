import type { SignInProviderConfig } from '../domain/sign-in.js';
import { ConfigError } from './config-error.js';
import { readConfigFile } from './config-file.js';
import { storeLocation } from './store-location.js';

export { ConfigError };

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
  /** Identity providers people sign in with, from the configuration file (docs/design.md, "Sign-in"). */
  signInProviders: SignInProviderConfig[];
  /**
   * Several workspaces per instance (personal workspaces, invites, switching); off, everyone shares Default
   * (docs/design.md, "Identity"). `workspaces.enabled` in the file; SVC_WORKSPACES_ENABLED overrides it.
   */
  workspacesEnabled: boolean;
}

export interface ServeFlags {
  host?: string;
  port?: number;
  dataDir?: string;
  roles?: string;
  /** `--config FILE`; else SVC_CONFIG. */
  config?: string;
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
  const { dataDir, eventStoreUrl, mongoUrl } = storeLocation(flags, env);
  // Replicas of a scaled deployment share no disk: a key file generated in one data directory would leave every other
  // replica unable to open secrets or check cookies (docs/design.md, "Identity").
  if ((eventStoreUrl || mongoUrl) && !env.SVC_MASTER_KEY?.trim()) {
    throw new ConfigError(
      'SVC_MASTER_KEY must be set when SVC_EVENTSTORE_URL or SVC_MONGO_URL is: every replica needs the same key, ' +
        'and a key file in one data directory is not shared (generate one with `openssl rand -base64 32`)',
    );
  }
  const configFile = flags.config ?? (env.SVC_CONFIG || undefined);
  const file = configFile ? readConfigFile(configFile, env) : { providers: [], workspacesEnabled: undefined };
  const workspacesEnv = env.SVC_WORKSPACES_ENABLED;
  if (workspacesEnv !== undefined && workspacesEnv !== 'true' && workspacesEnv !== 'false')
    throw new ConfigError(`SVC_WORKSPACES_ENABLED must be true or false, not "${workspacesEnv}"`);
  return {
    host,
    port,
    dataDir,
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
    signInProviders: file.providers,
    workspacesEnabled: workspacesEnv !== undefined ? workspacesEnv === 'true' : (file.workspacesEnabled ?? false),
  };
}
