import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { hostTargetAllowed, normalizeHost, outboundRefusal } from './address-guard.js';

/**
 * The fetch the MCP client uses for HTTP servers. Connections leave from the host, so they pass the same address
 * rules as the egress proxy (adapters/egress/address-guard.ts), checked on the resolved address at dial time: a name that
 * resolves to a metadata or link-local address is refused whatever DNS says. Private ranges and loopback are allowed
 * only when the operator allows private network targets for the instance (SVC_ALLOW_PRIVATE_NETWORK_TARGETS), since
 * an MCP server beside the service on the same host or network is an operator's choice, never a job's.
 */
export class AddressRefused extends Error {
  constructor(host: string, address: string) {
    super(outboundRefusal(host, address));
    this.name = 'AddressRefused';
  }
}

/** The host's own outbound rule (adapters/egress/address-guard.ts), the same at save and at dial. */
export const targetAllowed = hostTargetAllowed;

function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const ok = addresses.filter((a) => targetAllowed(a.address, allowPrivate));
      if (ok.length === 0) return callback(new AddressRefused(hostname, addresses[0]?.address ?? '(none)'), '', 0);
      if ((options as { all?: boolean }).all)
        return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, ok);
      callback(null, ok[0]!.address, ok[0]!.family);
    });
  };
}

const nullBody = new Set([101, 204, 205, 304]);

function toResponse(res: IncomingMessage): Response {
  const headers = new Headers();
  for (const [k, v] of Object.entries(res.headers)) {
    if (Array.isArray(v)) for (const item of v) headers.append(k, item);
    else if (v !== undefined) headers.set(k, v);
  }
  const status = res.statusCode ?? 502;
  if (nullBody.has(status)) {
    res.resume();
    return new Response(null, { status, statusText: res.statusMessage ?? '', headers });
  }
  return new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, {
    status,
    statusText: res.statusMessage ?? '',
    headers,
  });
}

async function bodyOf(body: RequestInit['body']): Promise<Buffer | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  return Buffer.from(await new Response(body).arrayBuffer());
}

/** A fetch over node's http/https whose every connection passes `targetAllowed`. Redirects are not followed here. */
export function guardedFetch(allowPrivate: boolean, connectTimeoutMs = 10_000): FetchLike {
  const lookup = guardedLookup(allowPrivate);
  return async (input, init = {}) => {
    const url = new URL(typeof input === 'string' ? input : input.href);
    const host = normalizeHost(url.hostname);
    // Node skips the lookup for address literals, so they are judged here.
    if (isIP(host) !== 0 && !targetAllowed(host, allowPrivate)) throw new AddressRefused(host, host);
    const headers = new Headers(init.headers);
    const payload = await bodyOf(init.body);
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Response>((resolve, reject) => {
      const req = request(
        url,
        {
          method: init.method ?? 'GET',
          headers: Object.fromEntries(headers.entries()),
          lookup,
          signal: init.signal ?? undefined,
        },
        (res) => resolve(toResponse(res)),
      );
      req.setTimeout(connectTimeoutMs, () =>
        req.destroy(new Error(`${url.host} did not answer within ${connectTimeoutMs / 1000} s`)),
      );
      req.on('response', () => req.setTimeout(0));
      req.on('error', reject);
      req.end(payload);
    });
  };
}
