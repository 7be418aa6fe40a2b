#!/usr/bin/env node
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError } from '../app/config-error.js';
import type { ServeFlags } from '../app/config.js';
import { storeLocation } from '../app/store-location.js';
import { ProjectionLease } from '../projections/lease.js';
import { ProjectionEngine } from '../projections/engine.js';
import { ignoreFailure } from '../domain/ignore-failure.js';
import pino from 'pino';
import { closeStores, openStores } from '../store/open.js';
import { allProjectors } from '../projections/index.js';
import { replayProgressLines } from './progress.js';
import { errorMessage } from '../domain/error-message.js';
import { wrappedMarker } from './memory-settings.js';

/**
 * The server's modules (the HTTP API, its schemas' validators, MCP) and the configuration file's parser are loaded by
 * the commands that use them only: loading them costs a command like `admin rebuild-projections` a second or two of
 * CPU before it starts. The commands that only open the stores read where they are (`storeLocation`).
 */
const serverModule = () => import('../server/start.js');
const loadConfig = async (flags: ServeFlags) => (await import('../app/config.js')).loadConfig(flags);
/** The CLI commands' own logger: warnings and errors only, on stdout like the server's. */
const warnLogger = () => pino({ level: 'warn', base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });

const usage = `svc: self-hosted job automation

Usage:
  svc serve [--host 127.0.0.1] [--port 8080] [--data-dir ./data] [--roles api,projector,scheduler,runner]
            [--config svc.yaml]               identity providers and workspaces (README.md)
  svc openapi [--yaml]                      print the OpenAPI document (no server needed)
  svc admin sign-in-link [--data-dir DIR] [--email E]
                                            print a single-use URL that signs in as the instance admin
  svc admin rebuild-projections [--data-dir DIR] [--projector NAME ...]
                                            rebuild read models from the event log (stop the server first)
  svc admin verify-projections [--data-dir DIR]
                                            replay the log into scratch read models and compare them with the
                                            live ones; exit 1 naming each difference (stop the server first)
  svc audit export [--data-dir DIR] [--workspace ID] [--job ID] [--since T] [--until T]
                                            print the audit trail as JSON Lines, oldest first; T is Unix ms or
                                            an ISO 8601 date
  svc admin apply-retention [--data-dir DIR]
                                            run the daily retention pass now (the server may be running)
  svc help

Environment: SVC_EVENTSTORE_URL, SVC_MONGO_URL (scaled adapters), SVC_MASTER_KEY, SVC_PUBLIC_URL, SVC_LOG_LEVEL,
SVC_CONFIG (the configuration file), SVC_WORKSPACES_ENABLED.
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
    config: { type: 'string' },
  });
  const config = await loadConfig({
    config: v.config as string | undefined,
    host: v.host as string | undefined,
    port: v.port !== undefined ? Number(v.port) : undefined,
    dataDir: v['data-dir'] as string | undefined,
    roles: v.roles as string | undefined,
  });
  // Started by the `svc` command for its memory settings (cli/svc.ts): a parent that is gone, even killed, stops it.
  // Listened to from the start, so a parent that dies while the server starts is not missed: the server then exits
  // as a SIGTERM before its handlers would have ended it.
  const wrapped = process.env[wrappedMarker] !== undefined && process.channel !== undefined;
  let onParentGone: () => void = () => process.exit(143);
  if (wrapped) {
    process.channel!.unref();
    process.on('disconnect', () => onParentGone());
  }
  const server = await (await serverModule()).startServer(config);
  const { guardProcess } = await import('../server/process-guards.js');
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
  onParentGone = () => stop('parent exited');
  if (wrapped && !process.connected) stop('parent exited');
}

async function baseUrl(dataDir: string): Promise<string> {
  if (process.env.SVC_PUBLIC_URL) return process.env.SVC_PUBLIC_URL.replace(/\/+$/, '');
  const file = (await serverModule()).serverInfoFile(dataDir);
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
    const config = await loadConfig({ dataDir: v['data-dir'] as string | undefined });
    const services = await (await serverModule()).openServices(config, warnLogger());
    try {
      const path = await services.identity.issueSignInLink(email);
      process.stdout.write(`${await baseUrl(config.dataDir)}${path}\n`);
    } finally {
      await closeStores(services.stores);
    }
    return;
  }
  if (sub === 'rebuild-projections') {
    const v = flags(rest, { 'data-dir': { type: 'string' }, projector: { type: 'string', multiple: true } });
    const config = storeLocation({ dataDir: v['data-dir'] as string | undefined });
    const stores = await openStores(config);
    const engine = new ProjectionEngine(stores.events, stores.docs, allProjectors, warnLogger());
    // The rebuild writes the read models, so it needs the lease every projector process takes before writing them.
    const lease = new ProjectionLease(stores.docs);
    try {
      // A killed server's lease is taken at once on its machine and runs out within its ttl elsewhere; a running one
      // renews it and the rebuild gives up.
      const deadline = Date.now() + lease.times.ttlMs + 5000;
      while (!(await lease.acquire())) {
        if (Date.now() > deadline) {
          const holder = await lease.current();
          throw new ConfigError(
            `a projector is running (${holder?.holder ?? 'another process'}); stop the servers with the projector role first`,
          );
        }
        await new Promise((r) => setTimeout(r, lease.times.pollMs));
      }
      engine.guardWrites(() => lease.held);
      const renew = setInterval(() => void lease.acquire().catch(ignoreFailure('the next renewal tries again')), 2000);
      try {
        const started = Date.now();
        const names = await engine.rebuild((v.projector as string[] | undefined) ?? []);
        await engine.replay(replayProgressLines((line) => process.stderr.write(line), 'rebuild-projections'));
        process.stdout.write(`rebuilt ${names.join(', ')} in ${Date.now() - started} ms\n`);
      } finally {
        clearInterval(renew);
        await lease.release();
      }
    } finally {
      await closeStores(stores);
    }
    return;
  }
  if (sub === 'verify-projections') {
    const v = flags(rest, { 'data-dir': { type: 'string' } });
    const config = storeLocation({ dataDir: v['data-dir'] as string | undefined });
    const stores = await openStores(config);
    // The scratch read models go to a file of their own, not memory: a long log makes large read models.
    const scratchDir = mkdtempSync(join(tmpdir(), 'svc-verify-'));
    const { openSqliteDocumentStore } = await import('../store/sqlite-document-store.js');
    const scratch = openSqliteDocumentStore(join(scratchDir, 'read.db'));
    try {
      const started = Date.now();
      const { verifyProjections } = await import('../projections/verify.js');
      const differences = await verifyProjections(
        stores.events,
        stores.docs,
        scratch,
        allProjectors,
        warnLogger(),
        replayProgressLines((line) => process.stderr.write(line), 'verify-projections'),
      );
      for (const d of differences)
        process.stdout.write(
          `${d.projector}: ${d.collection}${d.documentId !== null ? ` ${JSON.stringify(d.documentId)}` : ''}: ${d.problem}\n`,
        );
      const summary = `${allProjectors.length} projectors replayed in ${Date.now() - started} ms`;
      if (differences.length > 0) {
        process.stdout.write(`${differences.length} difference(s); ${summary}\n`);
        process.exitCode = 1;
      } else process.stdout.write(`the read models are what the events say; ${summary}\n`);
    } finally {
      await scratch.close();
      rmSync(scratchDir, { recursive: true, force: true });
      await closeStores(stores);
    }
    return;
  }
  if (sub === 'apply-retention') {
    const v = flags(rest, { 'data-dir': { type: 'string' } });
    const config = await loadConfig({ dataDir: v['data-dir'] as string | undefined });
    const services = await (await serverModule()).openServices(config, warnLogger());
    try {
      const { retentionOf } = await import('../server/runner-role.js');
      const report = await retentionOf(services).pass();
      process.stdout.write(`retention: ${report.purged} run(s) purged in ${report.workspaces} workspace(s)\n`);
    } finally {
      await closeStores(services.stores);
    }
    return;
  }
  throw new UsageError(`unknown admin command: ${sub ?? '(none)'}`);
}

/** Unix ms or an ISO 8601 date. */
function instant(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isSafeInteger(ms) || ms < 0) throw new UsageError(`--${flag}: not a time (Unix ms or ISO 8601): ${raw}`);
  return ms;
}

async function audit(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'export') throw new UsageError(`unknown audit command: ${sub ?? '(none)'}`);
  const v = flags(rest, {
    'data-dir': { type: 'string' },
    workspace: { type: 'string' },
    job: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
  });
  const since = instant('since', v.since as string | undefined);
  const until = instant('until', v.until as string | undefined);
  const config = storeLocation({ dataDir: v['data-dir'] as string | undefined });
  const stores = await openStores(config);
  try {
    const { exportAuditTrail } = await import('../app/audit-export.js');
    const entries = exportAuditTrail(stores.events, {
      ...(v.workspace !== undefined ? { workspaceId: v.workspace as string } : {}),
      ...(v.job !== undefined ? { jobId: v.job as string } : {}),
      ...(since !== undefined ? { since } : {}),
      ...(until !== undefined ? { until } : {}),
    });
    for await (const entry of entries) {
      if (!process.stdout.write(`${JSON.stringify(entry)}\n`)) await once(process.stdout, 'drain');
    }
  } finally {
    await closeStores(stores);
  }
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'openapi': {
      const v = flags(rest, { yaml: { type: 'boolean' } });
      process.stdout.write(await (await serverModule()).describeApi(v.yaml ? 'yaml' : 'json'));
      return;
    }
    case 'admin':
      return admin(rest);
    case 'audit':
      return audit(rest);
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
