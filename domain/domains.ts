/**
 * Host names for egress allow-lists: `api.example.com` or `*.example.com`. IP literals and URLs are refused, so
 * an allow-list entry can only ever name a DNS host.
 */
const label = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

export function normalizeDomain(raw: string): string {
  return raw.trim().toLowerCase().replace(/\.$/, '');
}

export function domainError(domain: string): string | null {
  const bad = 'must be a host name such as api.example.com or *.example.com';
  if (domain === '') return 'must not be empty';
  if (/[/:@?#\s[\]]/.test(domain)) return `${bad}, not a URL or an address`;
  const host = domain.startsWith('*.') ? domain.slice(2) : domain;
  if (host.length > 253) return 'must be at most 253 characters';
  if (/^[0-9.]+$/.test(host)) return `${bad}, not an IP address`;
  const labels = host.split('.');
  if (labels.length < 2 || !labels.every((l) => label.test(l))) return bad;
  return null;
}
