import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { chmodSync, rmSync } from 'node:fs';
import { createHash, randomUUID } from 'node:crypto';
import { Ajv } from 'ajv';
import { DomainError } from '../domain/decider.js';
import { ModelError } from '../runner/models/types.js';
import { RunSession, type RunSessionOptions } from './run-session.js';

const maxBody = 8 * 1024 * 1024;

class BrokerError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly fields: Array<{ field: string; code: string; message: string }> | null = null) {
    super(message);
  }
}

function fromDomain(err: unknown): BrokerError {
  if (err instanceof BrokerError) return err;
  if (err instanceof DomainError) {
    const status = { validation_failed: 400, not_found: 404, conflict: 409, forbidden: 403, invalid_token: 401 }[err.code as string] ?? 400;
    return new BrokerError(status, err.code, err.message, err.fields);
  }
  if (err instanceof ModelError) return new BrokerError(502, 'provider_error', `the model call failed: ${err.message}`);
  return new BrokerError(500, 'internal_error', (err as Error).message);
}

const invalid = (field: string, code: string, message: string) => new BrokerError(400, 'validation_failed', `${field} ${message}`, [{ field, code, message }]);

/**
 * The /v1 routes `svc` calls from inside sandboxes (SPEC §4.6, BEHAVIOUR §5), on a Unix socket that each sandbox
 * sees as /run/svc/broker.sock. A run's token is valid only while its session is open.
 */
export class Broker {
  private readonly sessions = new Map<string, RunSession>();
  private server: Server | null = null;
  private readonly ajv = new Ajv({ allErrors: true, strict: false });

  open(options: RunSessionOptions): RunSession {
    const session = new RunSession(options);
    this.sessions.set(session.tokenHash, session);
    return session;
  }

  closeSession(session: RunSession): { llmSpend: number } {
    this.sessions.delete(session.tokenHash);
    return session.close();
  }

  /** The live session of a token, for the egress proxy too. */
  sessionFor(token: string): RunSession | null {
    const s = this.sessions.get(createHash('sha256').update(token).digest('hex'));
    return s && !s.isClosed ? s : null;
  }

  async listen(path: string): Promise<void> {
    rmSync(path, { force: true });
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => this.server!.once('error', reject).listen(path, resolve));
    // Sandboxes connect as the unprivileged agent user.
    chmodSync(path, 0o666);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }

  private send(res: ServerResponse, status: number, body: unknown, requestId: string): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-request-id': requestId });
    res.end(text);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = randomUUID();
    const auth = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const session = auth ? this.sessionFor(auth) : null;
    if (!session) return this.send(res, 401, { code: 'invalid_token', message: 'The run token is missing, wrong, or the run is no longer executing', requestId }, requestId);
    const release = await session.acquire();
    const started = Date.now();
    const url = new URL(req.url ?? '/', 'http://broker');
    const endpoint = `${req.method} ${url.pathname}`;
    let extra: Record<string, unknown> = {};
    let kind: 'plain' | 'action' | 'paid' | 'state' = 'plain';
    try {
      const body = await readJson(req);
      const { answer, record } = await this.route(session, req.method ?? 'GET', url, body);
      extra = record?.extra ?? {};
      kind = record?.kind ?? 'plain';
      session.record({ endpoint, ok: true, ...extra }, Date.now() - started, kind);
      this.send(res, 200, answer, requestId);
    } catch (err) {
      const e = fromDomain(err);
      session.record({ endpoint, ok: false, error: e.message, ...extra }, Date.now() - started, kind);
      this.send(res, e.status, { code: e.code, message: e.message, ...(e.fields ? { fields: e.fields } : {}), requestId }, requestId);
    } finally {
      release();
    }
  }

  private async route(s: RunSession, method: string, url: URL, body: Record<string, unknown>): Promise<{ answer: unknown; record?: { extra?: Record<string, unknown>; kind?: 'plain' | 'action' | 'paid' | 'state' } }> {
    const { jobState, workspaceId, jobId } = s.options;
    const path = url.pathname;
    if (path === '/v1/state' && method === 'GET') {
      const entries = await jobState.list(workspaceId, jobId);
      return { answer: Object.fromEntries(entries.map((e) => [e.key, e.value])) };
    }
    if (path.startsWith('/v1/state/')) {
      const key = decodeURIComponent(path.slice('/v1/state/'.length));
      if (method === 'GET') {
        const value = await jobState.get(workspaceId, jobId, key);
        return { answer: { key, value, found: value !== null } };
      }
      if (method === 'PUT') {
        if (typeof body.value !== 'string') throw invalid('value', 'required', 'must be a string');
        await jobState.set(s.ctx, workspaceId, jobId, key, body.value);
        return { answer: { ok: true }, record: { kind: 'state' } };
      }
    }
    if (method === 'POST' && path === '/v1/output') {
      if (typeof body.key !== 'string') throw invalid('key', 'required', 'must be a string');
      let value: unknown = body.value ?? '';
      if (typeof body.text === 'string') {
        try {
          value = JSON.parse(body.text) as unknown;
        } catch {
          value = body.text;
        }
      }
      s.setOutput(body.key, value);
      return { answer: { ok: true } };
    }
    if (method === 'POST' && path === '/v1/step') {
      if (typeof body.name !== 'string') throw invalid('name', 'required', 'must be a string');
      s.step(body.name);
      return { answer: { ok: true } };
    }
    if (method === 'POST' && path === '/v1/summary') {
      if (typeof body.summary !== 'string') throw invalid('summary', 'required', 'must be a string');
      s.setSummary(body.summary);
      return { answer: { ok: true } };
    }
    if (method === 'POST' && path === '/v1/fail') {
      s.fail(typeof body.reason === 'string' ? body.reason : '');
      return { answer: { ok: true } };
    }
    if (method === 'POST' && path === '/v1/llm') return this.llm(s, body);
    if (path === '/v1/mcp/tools' || path === '/v1/mcp/call') throw new BrokerError(404, 'not_found', 'This job has no MCP servers');
    throw new BrokerError(404, 'not_found', `${method} ${path} is not a broker route`);
  }

  private async llm(s: RunSession, body: Record<string, unknown>) {
    const prompt = typeof body.prompt === 'string' ? body.prompt : '';
    if (prompt.trim() === '') throw invalid('prompt', 'required', 'must not be empty');
    let schema: Record<string, unknown> | null = null;
    if (typeof body.schemaText === 'string') {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.schemaText);
      } catch {
        throw invalid('schema', 'invalid_json', 'is not valid JSON');
      }
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalid('schema', 'not_object', 'must be a JSON object at its top level');
      schema = parsed as Record<string, unknown>;
    }
    const n = typeof body.maxTokens === 'number' ? body.maxTokens : 4096;
    const maxTokens = Number.isInteger(n) && n >= 1 && n <= 16000 ? n : 4096;
    const which = body.model === 'agent' ? 'agent' : 'utility';
    const req = { which, system: typeof body.system === 'string' ? body.system : null, prompt, schema, maxTokens } as const;
    let answer = await s.llm(req);
    let cost = answer.cost;
    let json: unknown = null;
    if (schema) {
      const validate = this.ajv.compile(schema);
      const parse = (text: string) => {
        try {
          const v = JSON.parse(text) as unknown;
          return validate(v) ? { ok: true as const, v } : { ok: false as const };
        } catch {
          return { ok: false as const };
        }
      };
      let parsed = parse(answer.text);
      if (!parsed.ok) {
        answer = await s.llm(req);
        cost += answer.cost;
        parsed = parse(answer.text);
      }
      if (!parsed.ok) throw new BrokerError(502, 'provider_error', 'the model did not answer JSON matching the schema');
      json = parsed.v;
    }
    const output = schema ? JSON.stringify(json, null, 2) : answer.text;
    return { answer: { output, text: answer.text, json, usage: answer.usage, cost, model: answer.model }, record: { extra: { model: answer.model, usage: answer.usage, cost }, kind: cost > 0 ? ('paid' as const) : ('plain' as const) } };
  }
}

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBody) {
        reject(invalid('body', 'too_large', 'is larger than 8 MiB'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      if (size === 0) return resolve({});
      try {
        const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
        resolve(v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
      } catch {
        reject(new BrokerError(400, 'invalid_request_body', 'The body is not valid JSON'));
      }
    });
    req.on('error', reject);
  });
}
