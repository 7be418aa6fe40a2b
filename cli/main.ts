#!/usr/bin/env node
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig } from '../app/config.js';
import { createLogger, describeApi, openServices, serverInfoFile, startServer } from '../server/start.js';
import { closeStores } from '../store/open.js';
import { guardProcess } from '../server/process-guards.js';
import { retentionOf } from '../server/runner-role.js';
import { errorMessage } from '../domain/error-message.js';

const usage = `svc: self-hosted job automation

Usage:
  svc serve [--host 127.0.0.1] [--port 8080] [--data-dir ./data] [--roles api,projector,scheduler,runner]
  svc openapi [--yaml]                      print the OpenAPI document (no server needed)
  svc admin sign-in-link [--data-dir DIR] [--email E]
                                            print a single-use URL that signs in as the instance admin
  svc admin rebuild-projections [--data-dir DIR] [--projector NAME ...]
                                            rebuild read models from the event log (stop the server first)
  svc admin apply-retention [--data-dir DIR]
                                            run the daily retention pass now (the server may be running)
  svc help

Environment: SVC_EVENTSTORE_URL, SVC_MONGO_URL (scaled adapters), SVC_MASTER_KEY, SVC_PUBLIC_URL, SVC_LOG_LEVEL.
`;

class UsageError extends Error {}

function flags(args: string[], options: NonNullable<ParseArgsConfig['options']>) {
  try {
    return parseArgs({ args, options, allowPositionals: false, strict: true }).values;
  } catch (err) {
    throw new UsageError(errorMessage(err));
  }
}

async function serve(args: string[]): Promise<void> {
  const v = flags(args, {
    host: { type: 'string' },
    port: { type: 'string' },
    'data-dir': { type: 'string' },
    roles: { type: 'string' },
  });
  const config = loadConfig({
    host: v.host as string | undefined,
    port: v.port !== undefined ? Number(v.port) : undefined,
    dataDir: v['data-dir'] as string | undefined,
    roles: v.roles as string | undefined,
  });
  const server = await startServer(config);
  guardProcess(server.services.log, () => server.close());
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.services.log.info({ signal }, 'stopping');
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        server.services.log.error({ err }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

function baseUrl(dataDir: string): string {
  if (process.env.SVC_PUBLIC_URL) return process.env.SVC_PUBLIC_URL.replace(/\/+$/, '');
  const file = serverInfoFile(dataDir);
  if (existsSync(file)) {
    try {
      return (JSON.parse(readFileSync(file, 'utf8')) as { url: string }).url;
    } catch {
      // A half-written file from a crashed server: fall back to the default address.
    }
  }
  return 'http://127.0.0.1:8080';
}

async function admin(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === 'sign-in-link') {
    const v = flags(rest, { 'data-dir': { type: 'string' }, email: { type: 'string' } });
    const email = (v.email as string | undefined) ?? 'admin@localhost';
    if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 320) throw new UsageError(`not an email address: ${email}`);
    const config = loadConfig({ dataDir: v['data-dir'] as string | undefined });
    const services = await openServices(config, createLogger('warn'));
    try {
      const path = await services.identity.issueSignInLink(email);
      process.stdout.write(`${baseUrl(config.dataDir)}${path}\n`);
    } finally {
      await closeStores(services.stores);
    }
    return;
  }
  if (sub === 'rebuild-projections') {
    const v = flags(rest, { 'data-dir': { type: 'string' }, projector: { type: 'string', multiple: true } });
    const config = loadConfig({ dataDir: v['data-dir'] as string | undefined });
    const services = await openServices(config, createLogger('warn'));
    try {
      const started = Date.now();
      const names = await services.engine.rebuild((v.projector as string[] | undefined) ?? []);
      await services.engine.start();
      await services.engine.catchUp();
      await services.engine.stop();
      process.stdout.write(`rebuilt ${names.join(', ')} in ${Date.now() - started} ms\n`);
    } finally {
      await closeStores(services.stores);
    }
    return;
  }
  if (sub === 'apply-retention') {
    const v = flags(rest, { 'data-dir': { type: 'string' } });
    const config = loadConfig({ dataDir: v['data-dir'] as string | undefined });
    const services = await openServices(config, createLogger('warn'));
    try {
      const report = await retentionOf(services).pass();
      process.stdout.write(`retention: ${report.purged} run(s) purged in ${report.workspaces} workspace(s)\n`);
    } finally {
      await closeStores(services.stores);
    }
    return;
  }
  throw new UsageError(`unknown admin command: ${sub ?? '(none)'}`);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'openapi': {
      const v = flags(rest, { yaml: { type: 'boolean' } });
      process.stdout.write(await describeApi(v.yaml ? 'yaml' : 'json'));
      return;
    }
    case 'admin':
      return admin(rest);
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(usage);
      return;
    default:
      throw new UsageError(command ? `unknown command: ${command}` : 'no command given');
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError) {
    process.stderr.write(`svc: ${err.message}\n\n${usage}`);
    process.exit(2);
  }
  if (err instanceof ConfigError) {
    process.stderr.write(`svc: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`svc: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
