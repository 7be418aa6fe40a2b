import { closeServer, listenOnSocket, retireServer } from './unix-server.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { hashToken } from '../adapters/keys.js';
import { BrokerError, invalid, toBrokerError } from './errors.js';
import { brokerLimits } from './limits.js';
import { RunSession, type CallKind, type LlmNote, type RunSessionOptions } from './run-session.js';

type Body = Record<string, unknown>;
/** What a call puts on the timeline besides endpoint, ok and error; filled as the call goes, so failures carry it too. */
interface CallRecord {
  extra: Record<string, unknown>;
  kind: CallKind;
}
/** An answer already serialized (the state map, whose key order JSON.stringify would not keep for numeric keys). */
class RawJson {
  constructor(readonly text: string) {}
}

const noMcp = () => new BrokerError(404, 'not_found', 'This job has no MCP servers');

/**
 * The /v1 routes `svc` calls from inside sandboxes (docs/sandbox.md). Each run is served on a Unix socket of
 * its own, which only its sandbox sees as /run/svc/broker.sock, and that socket honours that run's token alone, until
 * the run's session closes (docs/design.md "One broker socket per run"). At most 8 of a run's requests are handled
 * at once, the rest wait in order.
 */
export class Broker {
  private readonly sessions = new Map<string, RunSession>();
  private server: Server | null = null;
  /** The sockets of runs, until their sessions close. */
  private readonly channels = new Set<Server>();

  /** Registers a live run under its token; `session.close()` unregisters it. It is reachable once `serve`d. */
  open(options: RunSessionOptions): RunSession {
    const session = new RunSession(options, (s) => {
      if (this.sessions.get(s.tokenHash) === s) this.sessions.delete(s.tokenHash);
    });
    this.sessions.set(session.tokenHash, session);
    return session;
  }

  /** The open session of a token. */
  sessionFor(token: string): RunSession | null {
    const s = this.sessions.get(hashToken(token));
    return s && !s.isClosed ? s : null;
  }

  /**
   * Serves `session` alone on a new socket at `path`: a token of any other run is refused there, and the socket is
   * closed and removed when the session closes.
   */
  async serve(session: RunSession, path: string): Promise<void> {
    // What escapes handle() (it answers its own errors) ends that one request, never the process.
    const server = createServer((req, res) => void this.handle(req, res, session).catch(() => res.destroy()));
    await listenOnSocket(server, path);
    this.channels.add(server);
    session.onClose(async () => {
      await retireServer(server, path);
      this.channels.delete(server);
    });
  }

  /**
   * The socket of sandboxes that belong to no run (an MCP server's test sandbox): it exists so such sandboxes have a
   * broker address, and refuses every token.
   */
  async start(path: string): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res, null).catch(() => res.destroy()));
    this.server = server;
    await listenOnSocket(server, path);
  }

  /** Closes every session still open (their tokens stop working) and every socket, cutting open connections. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const session of [...this.sessions.values()]) session.close();
    await Promise.all([...this.channels, ...(server ? [server] : [])].map((s) => closeServer(s)));
    this.channels.clear();
  }

  private send(res: ServerResponse, status: number, body: unknown, requestId: string): void {
    if (res.writableEnded || res.destroyed) return;
    const text = body instanceof RawJson ? body.text : JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      'x-request-id': requestId,
    });
    res.end(text);
  }

  private sendError(res: ServerResponse, err: BrokerError, requestId: string): void {
    this.send(
      res,
      err.status,
      { code: err.code, message: err.message, ...(err.fields ? { fields: err.fields } : {}), requestId },
      requestId,
    );
  }

  /** `channel`: the run whose socket the request came in on, null on the socket of no run. */
  private async handle(req: IncomingMessage, res: ServerResponse, channel: RunSession | null): Promise<void> {
    const requestId = randomUUID();
    const token = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    const session = channel && token && channel.holds(token) ? channel : null;
    if (!session) {
      return this.sendError(
        res,
        new BrokerError(401, 'invalid_token', 'The run token is missing or unknown, or the run is no longer executing'),
        requestId,
      );
    }
    // A client that gives up while waiting for a slot leaves the queue.
    const gone = new AbortController();
    res.once('close', () => gone.abort());
    let release: () => void;
    try {
      release = await session.acquire(gone.signal);
    } catch {
      req.destroy();
      return;
    }
    const started = Date.now();
    const url = new URL(req.url ?? '/', 'http://broker');
    const method = req.method ?? 'GET';
    const endpoint = `${method} ${url.pathname}`;
    const rec: CallRecord = { extra: {}, kind: 'plain' };
    try {
      if (session.isClosed) throw new BrokerError(401, 'invalid_token', 'The run is no longer executing');
      const body = await readBody(req);
      const answer = await this.route(session, method, url, body, rec);
      session.record({ endpoint, ok: true, ...rec.extra }, Date.now() - started, rec.kind);
      this.send(res, 200, answer, requestId);
    } catch (err) {
      const e = toBrokerError(err);
      if (e.status === 401) {
        this.sendError(res, e, requestId);
      } else {
        session.record({ endpoint, ok: false, error: e.message, ...rec.extra }, Date.now() - started, rec.kind);
        if (e.fields?.some((f) => f.field === 'body' && f.code === 'too_large')) res.setHeader('connection', 'close');
        this.sendError(res, e, requestId);
      }
    } finally {
      release();
    }
  }

  private async route(s: RunSession, method: string, url: URL, body: Body, rec: CallRecord): Promise<unknown> {
    const { jobState, workspaceId, jobId, hooks } = s.options;
    const path = url.pathname;
    if (path === '/v1/state' && method === 'GET') {
      const entries = await jobState.list(workspaceId, jobId);
      return new RawJson(`{${entries.map((e) => `${JSON.stringify(e.key)}:${JSON.stringify(e.value)}`).join(',')}}`);
    }
    if (path.startsWith('/v1/state/') && (method === 'GET' || method === 'PUT')) {
      let key: string;
      try {
        key = decodeURIComponent(path.slice('/v1/state/'.length));
      } catch {
        throw invalid('key', 'invalid', 'is not valid percent-encoding');
      }
      if (method === 'GET') {
        const entry = await jobState.get(workspaceId, jobId, key);
        return { key, value: entry?.value ?? null, found: entry !== null };
      }
      const value = stringField(body, 'value');
      await jobState.set(s.ctx, workspaceId, jobId, key, value);
      rec.kind = 'state';
      return { ok: true };
    }
    if (method === 'POST' && path === '/v1/output') {
      const key = stringField(body, 'key');
      let value: unknown = body.value === undefined ? '' : body.value;
      if (typeof body.text === 'string') value = parseJsonOr(body.text);
      s.setOutput(key, value);
      return { ok: true };
    }
    if (method === 'POST' && path === '/v1/step') {
      s.step(stringField(body, 'name'));
      return { ok: true };
    }
    if (method === 'POST' && path === '/v1/summary') {
      s.setSummary(stringField(body, 'summary'));
      return { ok: true };
    }
    if (method === 'POST' && path === '/v1/fail') {
      s.fail(typeof body.reason === 'string' ? body.reason : '');
      return { ok: true };
    }
    if (method === 'POST' && path === '/v1/llm') return this.llm(s, body, rec);
    if (method === 'GET' && path === '/v1/mcp/tools') {
      if (!hooks.mcpTools) throw noMcp();
      const server = url.searchParams.get('server') || null;
      if (server) rec.extra = { server };
      return hooks.mcpTools(server);
    }
    if (method === 'POST' && path === '/v1/mcp/call') {
      if (!hooks.mcpCall) throw noMcp();
      const server = stringField(body, 'server');
      const tool = stringField(body, 'tool');
      let args: unknown = body.arguments === undefined ? {} : body.arguments;
      if (typeof body.argumentsText === 'string') {
        try {
          args = JSON.parse(body.argumentsText) as unknown;
        } catch {
          throw invalid('arguments', 'invalid_json', 'are not valid JSON');
        }
      }
      // Until the server says the tool is read-only, a call counts as an action (refusals included).
      rec.extra = { server, tool };
      rec.kind = 'action';
      const argsText = JSON.stringify(args) ?? '{}';
      let result: Awaited<ReturnType<typeof hooks.mcpCall>>;
      try {
        result = await hooks.mcpCall(server, tool, args);
      } catch (err) {
        s.noteAction(server, tool, argsText, false);
        throw err;
      }
      if (!result.readOnly) s.noteAction(server, tool, argsText, !result.isError);
      rec.extra = {
        server,
        tool,
        isError: result.isError,
        result: result.output.slice(0, brokerLimits.mcpResultChars),
      };
      rec.kind = result.readOnly ? 'plain' : 'action';
      return { output: result.output, isError: result.isError };
    }
    throw new BrokerError(404, 'not_found', `${method} ${path} is not a broker route`);
  }

  private async llm(s: RunSession, body: Body, rec: CallRecord): Promise<unknown> {
    const prompt = typeof body.prompt === 'string' ? body.prompt : '';
    if (prompt.trim() === '') throw invalid('prompt', 'required', 'must not be empty');
    let schema: Record<string, unknown> | null = null;
    let parsed: unknown = body.schema ?? null;
    if (typeof body.schemaText === 'string') {
      try {
        parsed = JSON.parse(body.schemaText) as unknown;
      } catch {
        throw invalid('schema', 'invalid_json', 'is not valid JSON');
      }
    }
    // A schema file that holds `null` is not an object either; only an absent schema means none.
    if (parsed !== null || typeof body.schemaText === 'string') {
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
        throw invalid('schema', 'not_object', 'must be a JSON object at its top level');
      schema = parsed as Record<string, unknown>;
    }
    const n = body.maxTokens;
    const maxTokens =
      typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= brokerLimits.llmMaxTokens
        ? n
        : brokerLimits.llmDefaultMaxTokens;
    const which = body.model === 'agent' ? 'agent' : 'utility';
    const note: LlmNote = { cost: 0 };
    try {
      const answer = await s.llm(
        { which, system: typeof body.system === 'string' ? body.system : null, prompt, schema, maxTokens },
        note,
      );
      const output = schema ? JSON.stringify(answer.json, null, 2) : answer.text;
      return {
        output,
        text: answer.text,
        json: schema ? answer.json : null,
        usage: answer.usage,
        cost: answer.cost,
        model: answer.model,
      };
    } finally {
      rec.extra = {
        ...(note.model ? { model: note.model } : {}),
        usage: note.usage ?? { input: 0, output: 0 },
        cost: note.cost,
      };
      rec.kind = note.cost > 0 ? 'paid' : 'plain';
    }
  }
}

function stringField(body: Body, field: string): string {
  const v = body[field];
  if (typeof v !== 'string') throw invalid(field, 'required', 'must be a string');
  return v;
}

/** `svc output set`: a text that parses as JSON stays JSON, anything else is the text itself. */
function parseJsonOr(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The request body as a JSON object (empty: `{}`), at most 8 MiB. */
function readBody(req: IncomingMessage): Promise<Body> {
  const tooLarge = () => invalid('body', 'too_large', 'is larger than 8 MiB');
  if (Number(req.headers['content-length'] ?? 0) > brokerLimits.bodyBytes) {
    req.resume();
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > brokerLimits.bodyBytes) {
        over = true;
        chunks.length = 0;
        reject(tooLarge());
      } else chunks.push(c);
    });
    req.on('end', () => {
      if (over) return;
      if (size === 0) return resolve({});
      try {
        const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
        if (v && typeof v === 'object' && !Array.isArray(v)) resolve(v as Body);
        else reject(new BrokerError(400, 'invalid_request_body', 'The body must be a JSON object'));
      } catch {
        reject(new BrokerError(400, 'invalid_request_body', 'The body is not valid JSON'));
      }
    });
    req.on('error', reject);
  });
}
