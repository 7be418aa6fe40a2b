import { isIP } from 'node:net';

/**
 * Where outgoing connections may go (docs/sandbox.md, "The egress proxy"): decisions on host names and addresses, pure and without I/O,
 * so the egress proxy and the host's own outgoing calls (HTTP MCP servers) decide the same way. Names are checked
 * before any DNS lookup; addresses are checked after it, at dial time, so DNS cannot route around the rules.
 */

/** A job's network rule as the proxy sees it. */
export interface NetworkRule {
  network: 'none' | 'internet' | 'allowlist';
  allowedDomains: string[] | null;
  allowPrivateNetwork: boolean;
}

export const addressRefusal = 'the egress proxy does not connect to this address';

/** Lowercased, without IPv6 brackets and without one trailing dot. */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

/** IPv6, or IPv4 in any form a resolver accepts (`127.1`, `0x7f.0.0.1`, `2130706433`). */
export function isIpLiteral(host: string): boolean {
  const h = normalizeHost(host);
  return isIP(h) !== 0 || isIP(h.split('%')[0]!) === 6 || /^(0x[0-9a-f]*|\d+)(\.(0x[0-9a-f]*|\d+)){0,3}$/.test(h);
}

const hostName = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** `example.com` matches itself only; `*.example.com` matches names below example.com, not example.com itself. */
export function onAllowList(host: string, list: readonly string[]): boolean {
  const h = normalizeHost(host);
  if (isIpLiteral(h)) return false;
  return list.some((entry) => {
    const e = normalizeHost(entry);
    if (e.startsWith('*.')) {
      const suffix = e.slice(1);
      return h.length > suffix.length && h.endsWith(suffix);
    }
    return h === e;
  });
}

export type HostDecision = { ok: true; host: string } | { ok: false; status: 400 | 403; host: string; message: string };

/** Everything decided on the name alone, before DNS: the network rule, IP literals, the allow-list. */
export function decideHost(rawHost: string, rule: NetworkRule): HostDecision {
  const host = normalizeHost(rawHost);
  if (rule.network === 'none')
    return { ok: false, status: 403, host, message: 'the egress proxy does not serve jobs without network access' };
  if (isIpLiteral(host))
    return {
      ok: false,
      status: 403,
      host,
      message: `${host} is an IP address; the egress proxy only connects to host names`,
    };
  if (!hostName.test(host)) return { ok: false, status: 400, host, message: `${host} is not a valid host name` };
  if (rule.network === 'allowlist' && !onAllowList(host, rule.allowedDomains ?? []))
    return { ok: false, status: 403, host, message: `${host} is not on this job's allow-list` };
  return { ok: true, host };
}

/** `never`: loopback, unspecified, multicast, link-local, broadcast, cloud metadata. `private`: RFC 1918, CGNAT, ULA. */
export type AddressClass = 'public' | 'private' | 'never';

function v4Parts(address: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (!m) return null;
  const parts = m.slice(1).map(Number);
  return parts.every((p) => p <= 255) ? parts : null;
}

const v4Never: Array<[number[], number]> = [
  [[0, 0, 0, 0], 8], // "this network", unspecified
  [[127, 0, 0, 0], 8], // loopback
  [[169, 254, 0, 0], 16], // link-local, 169.254.169.254 (metadata) included
  [[224, 0, 0, 0], 4], // multicast
  [[240, 0, 0, 0], 4], // reserved, broadcast included
  [[100, 100, 100, 200], 32], // Alibaba Cloud metadata
];
const v4Private: Array<[number[], number]> = [
  [[10, 0, 0, 0], 8],
  [[172, 16, 0, 0], 12],
  [[192, 168, 0, 0], 16],
  [[100, 64, 0, 0], 10], // carrier-grade NAT
];

function inRange(p: number[], [base, bits]: [number[], number]): boolean {
  const n = (x: number[]) => ((x[0]! << 24) | (x[1]! << 16) | (x[2]! << 8) | x[3]!) >>> 0;
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return (n(p) & mask) === (n(base) & mask);
}

function classifyV4(p: number[]): AddressClass {
  if (v4Never.some((r) => inRange(p, r))) return 'never';
  return v4Private.some((r) => inRange(p, r)) ? 'private' : 'public';
}

/** The 16 bytes of an IPv6 address (zone id ignored), or null. */
function v6Bytes(address: string): number[] | null {
  let a = address.split('%')[0]!;
  if (isIP(a) !== 6) return null;
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (dotted) {
    const v = v4Parts(dotted[2]!);
    if (!v) return null;
    a = `${dotted[1]}${((v[0]! << 8) | v[1]!).toString(16)}:${((v[2]! << 8) | v[3]!).toString(16)}`;
  }
  const groups = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  let all: number[];
  if (a.includes('::')) {
    const [left, right] = a.split('::') as [string, string];
    const l = groups(left);
    const r = groups(right);
    all = [...l, ...new Array<number>(8 - l.length - r.length).fill(0), ...r];
  } else all = groups(a);
  if (all.length !== 8 || all.some((g) => !(g >= 0 && g <= 0xffff))) return null;
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

const rank: Record<AddressClass, number> = { public: 0, private: 1, never: 2 };
const worst = (classes: AddressClass[]) =>
  classes.reduce((a, b) => (rank[b] > rank[a] ? b : a), 'public' as AddressClass);

/** Cloud metadata services on IPv6 (AWS, Google Cloud): inside the unique-local range, but never a target. */
const v6Metadata = ['fd00:ec2::254', 'fd20:ce::254'].map((a) => v6Bytes(a)!.join('.'));

/**
 * Classifies an IPv4 or IPv6 address. IPv6 forms that carry an IPv4 address a translator or tunnel delivers to are
 * judged by that address (docs/design.md "Outbound addresses"): mapped `::ffff:0:0/96`, translated `::ffff:0:0:0/96`,
 * compatible `::/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`, and Teredo `2001::/32` (server and client both). The
 * local-use NAT64 prefix `64:ff9b:1::/48` is never a target: where its IPv4 address sits depends on the operator's
 * prefix length, so it cannot be judged.
 */
export function classifyAddress(address: string): AddressClass {
  const v4 = v4Parts(address);
  if (v4) return classifyV4(v4);
  const b = v6Bytes(address);
  if (!b) return 'never';
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 16)) return 'never'; // ::
  if (zero(0, 15) && b[15] === 1) return 'never'; // ::1
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return classifyV4(b.slice(12)); // ::ffff:a.b.c.d (mapped)
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12)) return classifyV4(b.slice(12)); // ::ffff:0:a.b.c.d (SIIT)
  if (zero(0, 12)) return classifyV4(b.slice(12)); // ::a.b.c.d (compatible, deprecated)
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) {
    if (zero(4, 12)) return classifyV4(b.slice(12)); // 64:ff9b::/96 NAT64
    if (b[4] === 0 && b[5] === 1) return 'never'; // 64:ff9b:1::/48 local-use NAT64
  }
  if (b[0] === 0x20 && b[1] === 0x02) return classifyV4(b.slice(2, 6)); // 2002::/16 6to4
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0) {
    // 2001::/32 Teredo: the server's address in bits 32-63, the client's inverted in the last 32.
    return worst([classifyV4(b.slice(4, 8)), classifyV4(b.slice(12).map((x) => x ^ 0xff)), 'public']);
  }
  if (b[0] === 0xff) return 'never'; // multicast
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return 'never'; // fe80::/10 link-local
  if (v6Metadata.includes(b.join('.'))) return 'never';
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return 'private'; // fec0::/10 site-local (deprecated)
  if ((b[0]! & 0xfe) === 0xfc) return 'private'; // fc00::/7 unique local
  return 'public';
}

export function addressAllowed(address: string, allowPrivateNetwork: boolean): boolean {
  const c = classifyAddress(address);
  return c === 'public' || (c === 'private' && allowPrivateNetwork);
}

/**
 * The rule for connections the host itself makes (MCP servers over HTTP, their OAuth endpoints, notification
 * webhooks): public addresses always; private ranges and this host's loopback only when the operator allows private
 * network targets (SVC_ALLOW_PRIVATE_NETWORK_TARGETS), since a server beside the service is an operator's choice;
 * link-local, metadata, unspecified and multicast never. Loopback is judged after unwrapping any IPv4 form it hides in.
 */
export function hostTargetAllowed(address: string, allowPrivateTargets: boolean): boolean {
  const c = classifyAddress(address);
  if (c === 'public') return true;
  if (!allowPrivateTargets) return false;
  return c === 'private' || isLoopback(address);
}

function isLoopback(address: string): boolean {
  const v4 = v4Parts(address);
  if (v4) return v4[0] === 127;
  const b = v6Bytes(address);
  if (!b) return false;
  if (b.slice(0, 15).every((x) => x === 0) && b[15] === 1) return true;
  // ::ffff:127.x.y.z, the only embedded form a host's own stack delivers to its loopback.
  return b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff && b[12] === 127;
}

/**
 * Why the host must not connect to `url`, judged on what the URL itself says before any DNS lookup, or null: an
 * address literal in any spelling (the URL parser turns `0x7f.1`, `2130706433` or `017700000001` into dotted form),
 * `localhost` and names under it. A name's addresses can change, so they are judged again at every dial
 * (adapters/egress/guarded-fetch.ts): the same rule at save and at dial.
 */
export function outboundUrlRefusal(url: string, allowPrivateTargets: boolean): string | null {
  let host: string;
  try {
    host = normalizeHost(new URL(url).hostname);
  } catch {
    return null; // not a URL at all: the caller's own check words that
  }
  const address =
    host === 'localhost' || host.endsWith('.localhost')
      ? '127.0.0.1'
      : isIP(host) !== 0
        ? host
        : isIpLiteral(host)
          ? '0.0.0.0'
          : null;
  if (address === null || hostTargetAllowed(address, allowPrivateTargets)) return null;
  return outboundRefusal(host, address);
}

/** The message of a refused outbound connection, at save and at dial. */
export function outboundRefusal(host: string, address: string): string {
  return `${host} resolves to ${address}, which the service does not connect to (private and loopback targets need SVC_ALLOW_PRIVATE_NETWORK_TARGETS=true; link-local and metadata addresses never)`;
}
