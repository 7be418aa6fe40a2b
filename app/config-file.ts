import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type * as Zod from 'zod';
import { errorMessage } from '../domain/error-message.js';
import { ConfigError } from './config-error.js';
import {
  githubListsSomeone,
  providerIdPattern,
  type GithubProviderConfig,
  type OidcProviderConfig,
  type SignInProviderConfig,
} from '../domain/sign-in.js';

/** What the operator's YAML file sets (README.md, "Configuration file"). */
export interface FileConfig {
  providers: SignInProviderConfig[];
  workspacesEnabled: boolean | undefined;
}

/**
 * zod and yaml are loaded when a file is read, not when the server starts: most services have no file, and zod alone
 * held about 14 MB of a server's memory (docs/performance.md, "Configuration parsers at first use (2026-11-27)").
 * Their CommonJS builds are required so that reading the file stays synchronous.
 */
const requireCjs = createRequire(import.meta.url);

function buildFileSchema(z: typeof Zod.z) {
  const loopback = new Set(['localhost', '127.0.0.1', '[::1]']);

  /** https, or http on a loopback host (an identity provider on the same machine, as in the tests). */
  const serverUrl = z.string().superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be an https URL' });
      return;
    }
    const ok = url.protocol === 'https:' || (url.protocol === 'http:' && loopback.has(url.hostname));
    if (!ok || url.username || url.password || url.search || url.hash)
      ctx.addIssue({ code: 'custom', message: 'must be an https URL' });
  });

  const text = (max: number) =>
    z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);
  const names = z.array(text(200)).max(1000).default([]);

  const common = {
    name: text(100).optional(),
    primary: z.boolean().default(false),
    icon: text(2000).optional(),
    clientId: text(500),
  };

  const oidc = z.strictObject({
    type: z.literal('oidc'),
    ...common,
    issuer: serverUrl,
    clientSecret: text(2000).optional(),
    scopes: z
      .array(z.string().regex(/^[\x21-\x7e]+$/, 'must be a scope name without spaces'))
      .max(50)
      .default(['openid', 'profile', 'email', 'groups'])
      .refine((s) => s.includes('openid'), 'must include openid'),
    allowedGroups: names,
    adminGroups: names,
  });

  const github = z.strictObject({
    type: z.literal('github'),
    ...common,
    clientSecret: text(2000),
    allowedUsers: names,
    allowedOrganizations: names,
    adminUsers: names,
    adminOrganizations: names,
    baseUrl: serverUrl.default('https://github.com'),
    apiUrl: serverUrl.default('https://api.github.com'),
  });

  const provider = z.discriminatedUnion('type', [oidc, github], { error: 'must be oidc or github' });

  return z.strictObject({
    auth: z
      .strictObject({
        providers: z.record(z.string(), provider).default({}),
      })
      .optional(),
    workspaces: z.strictObject({ enabled: z.boolean() }).optional(),
  });
}

let fileSchema: ReturnType<typeof buildFileSchema> | undefined;

/** A configuration problem, with every message naming its key. */
export class ConfigFileError extends ConfigError {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`invalid configuration file ${file}:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  }
}

const keyOf = (path: readonly PropertyKey[]) =>
  path.reduce<string>(
    (acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p)),
    '',
  );

/**
 * Replaces `{{env:NAME}}` in every string of the parsed file. A variable that is not set is a problem naming both
 * the key and the variable, never an empty secret.
 */
function substitute(value: unknown, path: PropertyKey[], env: NodeJS.ProcessEnv, problems: string[]): unknown {
  if (typeof value === 'string') {
    return value.replace(/\{\{\s*env:([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (_m, name: string) => {
      const v = env[name];
      if (v === undefined) {
        problems.push(`${keyOf(path)}: environment variable ${name} is not set`);
        return '';
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substitute(v, [...path, i], env, problems));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substitute(v, [...path, k], env, problems);
    return out;
  }
  return value;
}

/** Parses and validates the file's text; `file` names it in errors. */
export function parseConfigFile(source: string, file: string, env: NodeJS.ProcessEnv): FileConfig {
  let raw: unknown;
  try {
    raw = (requireCjs('yaml') as typeof Yaml).parse(source, { maxAliasCount: 100 }) ?? {};
  } catch (err) {
    throw new ConfigFileError(file, [`not valid YAML: ${errorMessage(err)}`]);
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigFileError(file, ['must be a YAML mapping']);
  const problems: string[] = [];
  const substituted = substitute(raw, [], env, problems);
  if (problems.length) throw new ConfigFileError(file, problems);

  fileSchema ??= buildFileSchema((requireCjs('zod') as typeof Zod).z);
  const parsed = fileSchema.safeParse(substituted);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      if (issue.code === 'unrecognized_keys')
        for (const k of issue.keys) problems.push(`${keyOf([...issue.path, k])}: is not a known key`);
      else problems.push(`${keyOf(issue.path) || '(file)'}: ${issue.message}`);
    }
    throw new ConfigFileError(file, problems);
  }

  const providers: SignInProviderConfig[] = [];
  for (const [id, p] of Object.entries(parsed.data.auth?.providers ?? {})) {
    const key = `auth.providers.${id}`;
    if (!providerIdPattern.test(id) || id.length > 64) {
      problems.push(`${key}: provider ids are lowercase letters, digits and single hyphens (at most 64)`);
      continue;
    }
    const base = { id, primary: p.primary, icon: p.icon ?? null, clientId: p.clientId };
    if (p.type === 'oidc') {
      const cfg: OidcProviderConfig = {
        ...base,
        type: 'oidc',
        name: p.name ?? id,
        issuer: p.issuer.replace(/\/+$/, ''),
        clientSecret: p.clientSecret ?? null,
        scopes: p.scopes,
        allowedGroups: p.allowedGroups,
        adminGroups: p.adminGroups,
      };
      providers.push(cfg);
    } else {
      const cfg: GithubProviderConfig = {
        ...base,
        type: 'github',
        name: p.name ?? 'GitHub',
        clientSecret: p.clientSecret,
        allowedUsers: p.allowedUsers,
        allowedOrganizations: p.allowedOrganizations,
        adminUsers: p.adminUsers,
        adminOrganizations: p.adminOrganizations,
        baseUrl: p.baseUrl.replace(/\/+$/, ''),
        apiUrl: p.apiUrl.replace(/\/+$/, ''),
      };
      if (!githubListsSomeone(cfg))
        problems.push(
          `${key}: a GitHub provider must list who may sign in (allowedUsers, allowedOrganizations, adminUsers or adminOrganizations); without one every GitHub account could`,
        );
      providers.push(cfg);
    }
  }
  const primaries = providers.filter((p) => p.primary).map((p) => p.id);
  if (primaries.length > 1) problems.push(`auth.providers: only one provider may be primary (${primaries.join(', ')})`);
  if (problems.length) throw new ConfigFileError(file, problems);
  return { providers, workspacesEnabled: parsed.data.workspaces?.enabled };
}

export function readConfigFile(file: string, env: NodeJS.ProcessEnv): FileConfig {
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigFileError(file, [`cannot be read: ${errorMessage(err)}`]);
  }
  return parseConfigFile(source, file, env);
}
