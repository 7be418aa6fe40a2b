import { errorMessage } from './error-message.js';
/**
 * Cron schedules: five fields or a descriptor, evaluated on wall-clock time in an IANA timezone (BEHAVIOUR §7.1).
 * A wall time inside a skipped DST hour fires once, at the jump; a wall time that happens twice fires once, the
 * first time. Pure: time comes in as arguments.
 */

export class CronError extends Error {}

interface Field {
  values: boolean[];
  /** Written as `*` or `*\/n`: such a day field does not restrict (classic cron day-of-month/day-of-week rule). */
  star: boolean;
}

export interface CronSchedule {
  minute: Field;
  hour: Field;
  dayOfMonth: Field;
  month: Field;
  dayOfWeek: Field;
}

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
const maxDays = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: string[];
  namesFrom?: number;
}
const specs: FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: monthNames, namesFrom: 1 },
  { name: 'day of week', min: 0, max: 7, names: dayNames, namesFrom: 0 },
];

function parseNumber(text: string, spec: FieldSpec): number {
  const lower = text.toLowerCase();
  const named = spec.names?.indexOf(lower) ?? -1;
  if (named >= 0) return named + (spec.namesFrom ?? 0);
  if (!/^\d+$/.test(text)) throw new CronError(`"${text}" is not a number in the ${spec.name} field`);
  const n = Number(text);
  if (n < spec.min || n > spec.max)
    throw new CronError(`${n} is out of range for the ${spec.name} field (${spec.min}-${spec.max})`);
  return n;
}

function parseField(text: string, spec: FieldSpec): Field {
  const values = new Array<boolean>(spec.max + 1).fill(false);
  for (const item of text.split(',')) {
    if (item === '') throw new CronError(`empty list item in the ${spec.name} field`);
    const [range, stepText, extra] = item.split('/');
    if (extra !== undefined) throw new CronError(`"${item}" has more than one step in the ${spec.name} field`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) === 0)
        throw new CronError(`"${stepText}" is not a valid step in the ${spec.name} field`);
      step = Number(stepText);
    }
    let lo: number;
    let hi: number;
    if (range === '*') {
      lo = spec.min;
      hi = spec.name === 'day of week' ? 6 : spec.max;
    } else if (range!.includes('-')) {
      const [a, b, more] = range!.split('-');
      if (more !== undefined || a === undefined || b === undefined)
        throw new CronError(`"${range}" is not a valid range in the ${spec.name} field`);
      lo = parseNumber(a, spec);
      hi = parseNumber(b, spec);
      if (lo > hi) throw new CronError(`the range ${range} runs backwards in the ${spec.name} field`);
    } else {
      lo = parseNumber(range!, spec);
      hi = stepText !== undefined ? (spec.name === 'day of week' ? 6 : spec.max) : lo;
    }
    for (let v = lo; v <= hi; v += step) values[v] = true;
  }
  if (spec.name === 'day of week' && values[7]) {
    values[0] = true;
    values[7] = false;
  }
  return { values, star: text.startsWith('*') };
}

export function parseCron(expr: string): CronSchedule {
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
  if (parts.length !== 5)
    throw new CronError(`is not a valid cron expression: expected five fields, found ${parts.length}`);
  try {
    const [minute, hour, dayOfMonth, month, dayOfWeek] = parts.map((p, i) => parseField(p, specs[i]!)) as [
      Field,
      Field,
      Field,
      Field,
      Field,
    ];
    return { minute, hour, dayOfMonth, month, dayOfWeek };
  } catch (err) {
    throw new CronError(`is not a valid cron expression: ${errorMessage(err)}`);
  }
}

/** True when some month of the schedule has one of its days: `0 0 30 2 *` never fires. */
function canFire(s: CronSchedule): boolean {
  if (s.dayOfMonth.star || !s.dayOfWeek.star) return true;
  for (let m = 1; m <= 12; m++) {
    if (!s.month.values[m]) continue;
    for (let d = 1; d <= maxDays[m - 1]!; d++) if (s.dayOfMonth.values[d]) return true;
  }
  return false;
}

/** Null when the expression is valid, else a message that reads after the field name. */
export function validateCron(expr: string): string | null {
  try {
    if (!canFire(parseCron(expr))) return 'never fires';
    return null;
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

/** IANA names only: `UTC`, `Etc/GMT+5`, `Europe/Berlin`; not `Local`, not offsets. */
export function isValidTimezone(timezone: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(timezone) || timezone === 'Local') return false;
  try {
    formatter(timezone);
    return true;
  } catch {
    return false;
  }
}

/** The wall clock of an instant in a zone, as a "wall time" counted in ms like a UTC timestamp. */
function wallOf(instant: number, timezone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(timezone).formatToParts(new Date(instant)))
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!);
}

const minute = 60_000;
const hour = 60 * minute;

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

function dayMatches(s: CronSchedule, d: Date): boolean {
  const dom = s.dayOfMonth.values[d.getUTCDate()]!;
  const dow = s.dayOfWeek.values[d.getUTCDay()]!;
  if (s.dayOfMonth.star && s.dayOfWeek.star) return true;
  if (s.dayOfMonth.star) return dow;
  if (s.dayOfWeek.star) return dom;
  return dom || dow;
}

/** The next wall time at or after `from` that the schedule matches, skipping whole months, days and hours. */
function nextWall(s: CronSchedule, from: number, limit: number): number | null {
  let t = from;
  while (t < limit) {
    const d = new Date(t);
    if (!s.month.values[d.getUTCMonth() + 1]) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
      continue;
    }
    if (!dayMatches(s, d)) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
      continue;
    }
    if (!s.hour.values[d.getUTCHours()]) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours() + 1);
      continue;
    }
    if (!s.minute.values[d.getUTCMinutes()]) {
      t += minute;
      continue;
    }
    return t;
  }
  return null;
}

/** The first firing strictly after `after` (Unix ms, on a whole minute), or null for an invalid expression or zone. */
export function nextOccurrence(expr: string, timezone: string, after: number): number | null {
  let schedule: CronSchedule;
  try {
    schedule = parseCron(expr);
  } catch {
    return null;
  }
  if (!canFire(schedule) || !isValidTimezone(timezone)) return null;
  let wall = wallOf(after, timezone) + minute;
  // Leap days of a restricted weekday can be up to 28 years apart.
  const limit = wall + 30 * 366 * 24 * hour;
  for (;;) {
    const w = nextWall(schedule, wall, limit);
    if (w === null) return null;
    const instant = firstInstant(w, timezone);
    // A wall time already passed (the second run of a repeated hour) is not fired again.
    if (instant > after) return instant;
    wall = w + minute;
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

function listWords(text: string, words: string[], offset: number, spec: FieldSpec): string {
  return text
    .split(',')
    .map((item) => {
      const [a, b] = item.split('-');
      const word = (x: string) => words[(parseNumber(x, spec) % (spec.name === 'day of week' ? 7 : 13)) - offset] ?? x;
      return b !== undefined && !item.includes('/')
        ? `${word(a!)} through ${word(b)}`
        : item.includes('/')
          ? item
          : word(a!);
    })
    .join(', ');
}

/** An English reading of a schedule, for people. Never throws: an invalid expression reads as itself. */
export function describeCron(expr: string): string {
  const trimmed = expr.trim();
  try {
    parseCron(trimmed);
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
  if (dow !== '*') days.push(`on ${listWords(dow, dayWords, 0, specs[4]!)}`);
  if (mon !== '*') days.push(`in ${listWords(mon, monthWords, 1, specs[3]!)}`);
  const dayPart = days.join(' or ').replace(' or in ', ' in ');
  const sentence = dayPart ? `${time} ${dayPart}` : time.startsWith('at ') ? `every day ${time}` : time;
  return sentence[0]!.toUpperCase() + sentence.slice(1);
}
