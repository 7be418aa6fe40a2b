import { Cron } from 'croner';
import { errorMessage } from './error-message.js';

/**
 * Cron schedules (docs/design.md, "Schedules"): five standard fields or a descriptor, evaluated on the wall clock of
 * an IANA timezone. croner parses the expression and walks the calendar; the step from a wall time to an instant is
 * done here, because croner's own timezone mode treats DST differently for schedules with a wildcard, step or list in
 * the minute or hour field. Pure: time comes in as arguments.
 */

export class CronError extends Error {}

const descriptors: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const monthNames = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const dayNames = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: string[];
  /** The number of the first name: months count from 1, days of the week from 0. */
  namesFrom?: number;
}
const specs: readonly [FieldSpec, FieldSpec, FieldSpec, FieldSpec, FieldSpec] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: monthNames, namesFrom: 1 },
  { name: 'day of week', min: 0, max: 7, names: dayNames, namesFrom: 0 },
];

function valueOf(text: string, spec: FieldSpec): number {
  const named = spec.names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return named + (spec.namesFrom ?? 0);
  if (!/^\d+$/.test(text)) throw new CronError(`"${text}" is not a number in the ${spec.name} field`);
  const n = Number(text);
  if (n < spec.min || n > spec.max)
    throw new CronError(`${n} is out of range for the ${spec.name} field (${spec.min}-${spec.max})`);
  return n;
}

/**
 * The standard syntax only (numbers, names, `*`, lists, ranges, steps), with messages that name the field: croner
 * also reads seconds, `L`, `W`, `#` and `?` (which reads the clock), and its range messages count days and months
 * from 0. `5/15` (from 5 on, every 15) stays valid, as it was before croner.
 */
function checkField(text: string, spec: FieldSpec): void {
  for (const item of text.split(',')) {
    const m = /^(\*|[a-z0-9]+)(?:-([a-z0-9]+))?(?:\/(\d+))?$/i.exec(item);
    if (!m || (m[1] === '*' && m[2] !== undefined))
      throw new CronError(`"${item}" is not a number, a range or * with an optional /step in the ${spec.name} field`);
    const [, from, to, step] = m;
    if (step !== undefined && Number(step) === 0)
      throw new CronError(`"${step}" is not a valid step in the ${spec.name} field`);
    if (from === '*' || from === undefined) continue;
    const lo = valueOf(from, spec);
    if (to !== undefined && valueOf(to, spec) < lo)
      throw new CronError(`the range ${from}-${to} runs backwards in the ${spec.name} field`);
  }
}

/**
 * Compiled expressions by their text: the jobs projector asks for a schedule's next firing on every change of a
 * scheduled job, and compiling was most of that (docs/performance.md, "Cron without recompiling (2026-11-27)").
 * Bounded, oldest first out; only valid expressions are kept (a Cron's `nextRun` from a date reads no state of its
 * own).
 */
const compiled = new Map<string, Cron>();
const compiledMax = 1000;

/** croner on a clock without DST: the wall clock of the job's zone, written as if it were UTC. */
function compile(expr: string): Cron {
  let cron = compiled.get(expr);
  if (cron) return cron;
  cron = compileNew(expr);
  if (compiled.size >= compiledMax) compiled.delete(compiled.keys().next().value!);
  compiled.set(expr, cron);
  return cron;
}

function compileNew(expr: string): Cron {
  const trimmed = expr.trim();
  if (/^(CRON_)?TZ=/i.test(trimmed)) throw new CronError('must not set a timezone, use the timezone field instead');
  if (/^@every\b/i.test(trimmed)) throw new CronError('must be a five-field expression or a descriptor such as @daily');
  let body = trimmed;
  if (trimmed.startsWith('@')) {
    const d = descriptors[trimmed.toLowerCase()];
    if (!d) throw new CronError(`is not a valid cron expression: unknown descriptor ${trimmed}`);
    body = d;
  }
  const parts = body.split(/\s+/).filter(Boolean);
  try {
    if (parts.length !== 5) throw new CronError(`expected five fields, found ${parts.length}`);
    parts.forEach((part, i) => checkField(part, specs[i as 0 | 1 | 2 | 3 | 4]));
    return new Cron(parts.join(' '), { mode: '5-part', utcOffset: 0, sloppyRanges: true });
  } catch (err) {
    throw new CronError(`is not a valid cron expression: ${errorMessage(err).replace(/^CronPattern: /, '')}`);
  }
}

/** Null when the expression is valid, else a message that reads after the field name. */
export function validateCron(expr: string): string | null {
  try {
    // A day that no month has (`0 0 30 2 *`): croner searches its whole horizon and finds nothing.
    return compile(expr).nextRun(new Date(0)) === null ? 'never fires' : null;
  } catch (err) {
    return errorMessage(err);
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timezone: string): Intl.DateTimeFormat {
  let f = formatters.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    formatters.set(timezone, f);
  }
  return f;
}

/** Zones whose wall clock is UTC's all year: their wall time is the instant's minute, with no formatter to ask. */
const utcZones = new Set(['UTC', 'Etc/UTC', 'Etc/GMT', 'GMT', 'Etc/Universal', 'Universal', 'Etc/Zulu', 'Zulu']);

/**
 * IANA names only: `UTC`, `Etc/GMT+5`, `Europe/Berlin`; not `Local`, not offsets. The UTC names are known without a
 * formatter: the first one built costs ~30 ms of CPU (loading the zone data), which a replay of UTC-only jobs skips.
 */
export function isValidTimezone(timezone: string): boolean {
  if (utcZones.has(timezone)) return true;
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(timezone) || timezone === 'Local') return false;
  try {
    formatter(timezone);
    return true;
  } catch {
    return false;
  }
}

const minute = 60_000;
const hour = 60 * minute;

/** The wall clock of an instant in a zone, as a "wall time" counted in ms like a UTC timestamp. */
function wallOf(instant: number, timezone: string): number {
  if (utcZones.has(timezone)) return Math.floor(instant / minute) * minute;
  const parts: Record<string, number> = {};
  for (const p of formatter(timezone).formatToParts(new Date(instant)))
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!);
}

/** The first instant at which the zone's clock shows `wall` or, inside a skipped interval, the instant of the jump. */
function firstInstant(wall: number, timezone: string): number {
  // Offsets a day either side bracket any transition; a wall time maps to `wall - offset` for one of them.
  const offsets = [wall - 24 * hour, wall + 24 * hour].map(
    (probe) => wallOf(probe, timezone) - Math.floor(probe / minute) * minute,
  );
  const hits = offsets
    .map((o) => wall - o)
    .filter((t) => wallOf(t, timezone) === wall)
    .sort((a, b) => a - b);
  if (hits.length > 0) return hits[0]!;
  // A gap: find the first minute whose wall clock is past `wall`.
  let lo = wall - Math.max(...offsets);
  let hi = wall - Math.min(...offsets);
  if (lo > hi) [lo, hi] = [hi, lo];
  while (hi - lo > minute) {
    const mid = lo + Math.floor((hi - lo) / minute / 2) * minute;
    if (wallOf(mid, timezone) > wall) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** The first firing strictly after `after` (Unix ms, on a whole minute), or null for an invalid expression or zone. */
export function nextOccurrence(expr: string, timezone: string, after: number): number | null {
  let cron: Cron;
  try {
    cron = compile(expr);
  } catch {
    return null;
  }
  if (!isValidTimezone(timezone)) return null;
  let wall = wallOf(after, timezone);
  for (;;) {
    const next = cron.nextRun(new Date(wall));
    if (next === null) return null;
    wall = next.getTime();
    const instant = firstInstant(wall, timezone);
    // A wall time already passed (the second run of a repeated hour) is not fired again.
    if (instant > after) return instant;
  }
}

const pad = (n: number) => String(n).padStart(2, '0');
const dayWords = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const monthWords = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

function single(text: string): number | null {
  return /^\d+$/.test(text) ? Number(text) : null;
}

function listWords(text: string, words: string[], spec: FieldSpec): string {
  // Months count from 1; day 7 is Sunday again.
  const word = (x: string) => {
    const v = valueOf(x, spec);
    return words[spec.name === 'month' ? v - 1 : v % 7] ?? x;
  };
  return text
    .split(',')
    .map((item) => {
      if (item.includes('/')) return item;
      const [a, b] = item.split('-') as [string, string | undefined];
      return b !== undefined ? `${word(a)} through ${word(b)}` : word(a);
    })
    .join(', ');
}

/** An English reading of a schedule, for people. Never throws: an invalid expression reads as itself. */
export function describeCron(expr: string): string {
  const trimmed = expr.trim();
  try {
    compile(trimmed);
  } catch {
    return trimmed;
  }
  const lower = trimmed.toLowerCase();
  if (lower === '@hourly') return 'Every hour';
  if (lower === '@daily' || lower === '@midnight') return 'Every day at 00:00';
  if (lower === '@weekly') return 'Every Sunday at 00:00';
  if (lower === '@monthly') return 'At 00:00 on day 1 of the month';
  if (lower === '@yearly' || lower === '@annually') return 'At 00:00 on January 1';
  const [mi, h, dom, mon, dow] = trimmed.split(/\s+/) as [string, string, string, string, string];
  const m = single(mi);
  const hr = single(h);
  let time: string;
  if (m !== null && hr !== null) time = `at ${pad(hr)}:${pad(m)}`;
  else if (mi === '*' && h === '*') time = 'every minute';
  else if (/^\*\/\d+$/.test(mi) && h === '*') time = `every ${mi.slice(2)} minutes`;
  else if (m !== null && h === '*') time = m === 0 ? 'every hour' : `every hour at minute ${m}`;
  else if (m !== null && /^\*\/\d+$/.test(h))
    time = m === 0 ? `every ${h.slice(2)} hours` : `at minute ${m} every ${h.slice(2)} hours`;
  else if (/^\d+\/\d+$/.test(mi) && h === '*')
    time = `every ${mi.split('/')[1]} minutes from minute ${mi.split('/')[0]}`;
  else if (h === '*') time = `every hour at minutes ${mi}`;
  else if (m !== null) time = `at minute ${m} past hours ${h}`;
  else time = `at minutes ${mi} past hours ${h}`;
  const days: string[] = [];
  if (dom !== '*') days.push(single(dom) !== null ? `on day ${dom} of the month` : `on days ${dom} of the month`);
  if (dow !== '*') days.push(`on ${listWords(dow, dayWords, specs[4])}`);
  if (mon !== '*') days.push(`in ${listWords(mon, monthWords, specs[3])}`);
  const dayPart = days.join(' or ').replace(' or in ', ' in ');
  const sentence = dayPart ? `${time} ${dayPart}` : time.startsWith('at ') ? `every day ${time}` : time;
  return sentence[0]!.toUpperCase() + sentence.slice(1);
}
