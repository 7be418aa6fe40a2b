import { isIP } from 'node:net';

/**
 * Where the egress proxy may connect (BEHAVIOUR §5.5). Pure: decisions on names and addresses, no I/O, so the host
 * can reuse it for its own outgoing calls.
 */
export function normalizeHost(host: string): string {
  return host.trim().toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

export const isIpLiteral = (host: string) => isIP(normalizeHost(host)) !== 0;

/** `example.com` matches itself only; `*.example.com` matches names below it, not example.com itself. */
export function onAllowList(host: string, list: string[]): boolean {
  const h = normalizeHost(host);
  return list.some((entry) => {
    const e = normalizeHost(entry);
    return e.startsWith('*.') ? h.endsWith(e.slice(1)) && h.length > e.length - 1 : h === e;
  });
}

function v4(addr: string): number[] | null {
  const parts = addr.split('.').map(Number);
  return parts.length === 4 && parts.every((p) => Number.isInteger(p) && p >= 0 && p <= 255) ? parts : null;
}

function inV4(p: number[], base: number[], bits: number): boolean {
  const n = (x: number[]) => ((x[0]! << 24) | (x[1]! << 16) | (x[2]! << 8) | x[3]!) >>> 0;
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return (n(p) & mask) === (n(base) & mask);
}

export type AddressVerdict = 'allowed' | 'private' | 'never';

/** `never`: loopback, unspecified, multicast, link-local, metadata. `private`: RFC1918, CGNAT, ULA. */
export function classifyAddress(address: string): AddressVerdict {
  let a = address.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) a = mapped[1]!;
  const p = v4(a);
  if (p) {
    const never: Array<[number[], number]> = [[[127, 0, 0, 0], 8], [[0, 0, 0, 0], 8], [[224, 0, 0, 0], 4], [[240, 0, 0, 0], 4], [[169, 254, 0, 0], 16], [[100, 100, 100, 200], 32]];
    if (never.some(([b, bits]) => inV4(p, b, bits))) return 'never';
    const priv: Array<[number[], number]> = [[[10, 0, 0, 0], 8], [[172, 16, 0, 0], 12], [[192, 168, 0, 0], 16], [[100, 64, 0, 0], 10]];
    return priv.some(([b, bits]) => inV4(p, b, bits)) ? 'private' : 'allowed';
  }
  if (a === '::1' || a === '::' || a.startsWith('ff') || /^fe[89ab]/.test(a)) return 'never';
  if (/^f[cd]/.test(a)) return 'private';
  return 'allowed';
}

export function addressAllowed(address: string, allowPrivateNetwork: boolean): boolean {
  const v = classifyAddress(address);
  return v === 'allowed' || (v === 'private' && allowPrivateNetwork);
}
