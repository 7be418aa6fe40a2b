/** Display helpers; times are shown in the viewer's locale, in the given time zone when there is one. */

// Building an Intl formatter costs far more than using one: a list of 100 rows would build hundreds.
const dateFormats = new Map<string, Intl.DateTimeFormat>();
function dateFormat(timeZone: string | null | undefined): Intl.DateTimeFormat {
  const key = timeZone ?? '';
  let f = dateFormats.get(key);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat(undefined, {
        dateStyle: 'medium',
        timeStyle: 'short',
        ...(timeZone ? { timeZone } : {}),
      });
    } catch {
      // An unknown zone name must not break the page.
      f = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
    }
    dateFormats.set(key, f);
  }
  return f;
}

export function dateTime(ms: number | null | undefined, timeZone?: string | null): string {
  if (ms === null || ms === undefined) return '—';
  return dateFormat(timeZone).format(ms);
}

const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

export function relative(ms: number | null | undefined, now = Date.now()): string {
  if (ms === null || ms === undefined) return '—';
  const diff = ms - now;
  const abs = Math.abs(diff);
  if (abs < 60_000) return rtf.format(Math.round(diff / 1000), 'second');
  if (abs < 3_600_000) return rtf.format(Math.round(diff / 60_000), 'minute');
  if (abs < 86_400_000) return rtf.format(Math.round(diff / 3_600_000), 'hour');
  return rtf.format(Math.round(diff / 86_400_000), 'day');
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

/** micro-USD as dollars. */
export function cost(micro: number): string {
  if (micro === 0) return '$0';
  const usd = micro / 1_000_000;
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

export const liveStatuses = new Set(['queued', 'provisioning', 'running', 'verifying']);
