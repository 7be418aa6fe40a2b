import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Cron } from 'croner';
import { describeCron, isValidTimezone, nextOccurrence, validateCron } from '../../domain/cron.js';

const at = (iso: string) => Date.parse(iso);
const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

describe('cron validation', () => {
  it('accepts five fields with lists, ranges, steps, names and descriptors', () => {
    for (const e of [
      '* * * * *',
      '0,15,30,45 * * * *',
      '0 9-17 * * 1-5',
      '*/5 * * * *',
      '1-10/2 * * * *',
      '5/15 * * * *',
      '0 0 1 jan,JUL *',
      '0 12 * * MON-fri',
      '0 0 * * 7',
      '@yearly',
      '@annually',
      '@monthly',
      '@weekly',
      '@daily',
      '@midnight',
      '@hourly',
    ]) {
      assert.equal(validateCron(e), null, e);
    }
  });

  it('refuses what it cannot run, with a reason', () => {
    assert.match(validateCron('@every 5m')!, /five-field expression or a descriptor/);
    assert.match(validateCron('TZ=Europe/Berlin 0 9 * * *')!, /timezone field/);
    assert.match(validateCron('CRON_TZ=UTC 0 9 * * *')!, /timezone field/);
    assert.match(validateCron('61 * * * *')!, /^is not a valid cron expression: .*out of range/);
    assert.match(validateCron('* * * *')!, /expected five fields/);
    assert.match(validateCron('0 0 * * 8')!, /out of range/);
    assert.match(validateCron('0 0 * foo *')!, /not a number/);
    assert.match(validateCron('*/0 * * * *')!, /not a valid step/);
    assert.match(validateCron('5-1 * * * *')!, /backwards/);
    assert.match(validateCron('@fortnightly')!, /unknown descriptor/);
    assert.equal(validateCron('0 0 30 2 *'), 'never fires');
    assert.equal(validateCron('0 0 31 4,6,9,11 *'), 'never fires');
    assert.equal(validateCron('0 0 31 2 1'), null, 'day of week makes it fire');
  });

  it('keeps to the standard five fields, which croner alone would widen', () => {
    const refused: Array<[string, RegExp]> = [
      ['0 0 9 * * *', /expected five fields, found 6/],
      ['0 0 L * *', /"L" is not a number in the day of month field/],
      ['0 0 15W * *', /"15W" is not a number in the day of month field/],
      ['0 0 * * 5#2', /"5#2" is not a number, a range or \* with an optional \/step in the day of week field/],
      ['0 0 ? * *', /"\?" is not a number, a range/],
      ['0 0 * * +1', /"\+1" is not a number, a range/],
      ['/5 * * * *', /"\/5" is not a number, a range/],
      ['*-5 * * * *', /"\*-5" is not a number, a range/],
      ['1,,2 * * * *', /"" is not a number, a range/],
      ['0 0 * * jan', /"jan" is not a number in the day of week field/],
      ['0 0 * mon *', /"mon" is not a number in the month field/],
    ];
    for (const [expr, reason] of refused) {
      const problem = validateCron(expr);
      assert.match(problem ?? 'accepted', /^is not a valid cron expression: /, expr);
      assert.match(problem!, reason, expr);
    }
  });

  it('names the field and its range where croner would count days and months from 0', () => {
    assert.equal(
      validateCron('0 0 32 * *'),
      'is not a valid cron expression: 32 is out of range for the day of month field (1-31)',
    );
    assert.equal(
      validateCron('0 0 0 * *'),
      'is not a valid cron expression: 0 is out of range for the day of month field (1-31)',
    );
    assert.equal(
      validateCron('0 0 * 13 *'),
      'is not a valid cron expression: 13 is out of range for the month field (1-12)',
    );
    assert.equal(
      validateCron('0 24 * * *'),
      'is not a valid cron expression: 24 is out of range for the hour field (0-23)',
    );
    assert.equal(
      validateCron('0 0 * * 6-0'),
      'is not a valid cron expression: the range 6-0 runs backwards in the day of week field',
    );
    // What croner refuses past our checks keeps its reason, without croner's class name.
    assert.equal(
      validateCron('*/61 * * * *'),
      'is not a valid cron expression: Syntax error, steps cannot be greater than maximum value of part (60)',
    );
    assert.equal(validateCron('@DAILY'), null, 'descriptors in any case');
    assert.equal(validateCron('0\t9  *  * 1'), null, 'any run of blanks separates fields');
  });

  it('knows IANA timezones only', () => {
    for (const tz of ['UTC', 'Europe/Berlin', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5'])
      assert.equal(isValidTimezone(tz), true, tz);
    for (const tz of ['Local', 'Mars/Olympus', '+05:00', '', 'utc offset'])
      assert.equal(isValidTimezone(tz), false, tz);
  });
});

describe('next occurrence', () => {
  it('fires strictly after the given time, on whole minutes', () => {
    assert.equal(iso(nextOccurrence('*/15 * * * *', 'UTC', at('2026-01-01T10:00:00Z'))), '2026-01-01T10:15:00.000Z');
    assert.equal(iso(nextOccurrence('*/15 * * * *', 'UTC', at('2026-01-01T10:07:31Z'))), '2026-01-01T10:15:00.000Z');
    assert.equal(
      iso(nextOccurrence('0 9 * * 1-5', 'UTC', at('2026-01-02T09:00:00Z'))),
      '2026-01-05T09:00:00.000Z',
      'Friday to Monday',
    );
  });

  it('gives UTC and its aliases the same firings as a zone read through the formatter, compiled once or afresh', () => {
    // UTC's wall time is taken without a formatter, and compiled expressions are reused: Etc/GMT+0 goes the long way.
    const exprs = ['*/7 * * * *', '0 9 * * 1-5', '30 2 * * *', '0 0 29 2 *', '5/15 * * * *', '@weekly'];
    let t = at('2026-01-01T00:00:00Z');
    for (let i = 0; i < 300; i++) {
      t += 37 * 60_000 + 13_000 + i * 3_600_000;
      const expr = exprs[i % exprs.length]!;
      const formatted = nextOccurrence(expr, 'Etc/GMT+0', t);
      for (const zone of ['UTC', 'Etc/UTC', 'GMT'])
        assert.equal(nextOccurrence(expr, zone, t), formatted, `${expr} ${zone}`);
    }
    assert.equal(nextOccurrence('61 * * * *', 'UTC', t), null, 'an invalid expression is not kept as compiled');
    assert.equal(nextOccurrence('61 * * * *', 'UTC', t), null);
  });

  it('evaluates wall-clock time in the zone', () => {
    assert.equal(
      iso(nextOccurrence('0 9 * * *', 'Asia/Kolkata', at('2026-01-01T00:00:00Z'))),
      '2026-01-01T03:30:00.000Z',
    );
    assert.equal(
      iso(nextOccurrence('0 9 * * *', 'Europe/Berlin', at('2026-07-01T00:00:00Z'))),
      '2026-07-01T07:00:00.000Z',
    );
    assert.equal(
      iso(nextOccurrence('0 9 * * *', 'Europe/Berlin', at('2026-01-10T00:00:00Z'))),
      '2026-01-10T08:00:00.000Z',
    );
  });

  it('fires once just after the jump for a wall time in a skipped hour', () => {
    // New York, 2026-03-08: 02:00 EST jumps to 03:00 EDT at 07:00Z.
    assert.equal(
      iso(nextOccurrence('30 2 * * *', 'America/New_York', at('2026-03-08T00:00:00Z'))),
      '2026-03-08T07:00:00.000Z',
    );
    assert.equal(
      iso(nextOccurrence('30 2 * * *', 'America/New_York', at('2026-03-08T07:00:00Z'))),
      '2026-03-09T06:30:00.000Z',
    );
    // Lord Howe shifts by 30 minutes: 02:00 jumps to 02:30 on 2026-10-04 (15:30Z the day before).
    assert.equal(
      iso(nextOccurrence('15 2 * * *', 'Australia/Lord_Howe', at('2026-10-03T12:00:00Z'))),
      '2026-10-03T15:30:00.000Z',
    );
  });

  it('fires once for a wall time that happens twice', () => {
    // New York, 2026-11-01: 02:00 EDT falls back to 01:00 EST at 06:00Z; 01:30 happens at 05:30Z and 06:30Z.
    const first = nextOccurrence('30 1 * * *', 'America/New_York', at('2026-11-01T04:00:00Z'));
    assert.equal(iso(first), '2026-11-01T05:30:00.000Z');
    assert.equal(iso(nextOccurrence('30 1 * * *', 'America/New_York', first!)), '2026-11-02T06:30:00.000Z');
    const berlin = nextOccurrence('30 2 * * *', 'Europe/Berlin', at('2026-10-25T00:00:00Z'));
    assert.equal(iso(berlin), '2026-10-25T00:30:00.000Z');
    assert.equal(iso(nextOccurrence('30 2 * * *', 'Europe/Berlin', berlin!)), '2026-10-26T01:30:00.000Z');
  });

  it('uses OR when both day fields are restricted', () => {
    // The 13th, or any Friday.
    const got: string[] = [];
    let t = at('2026-02-01T00:00:00Z');
    for (let i = 0; i < 5; i++) got.push(iso((t = nextOccurrence('0 0 13 * 5', 'UTC', t)!))!.slice(0, 10));
    assert.deepEqual(got, ['2026-02-06', '2026-02-13', '2026-02-20', '2026-02-27', '2026-03-06']);
  });

  it('finds leap days and Sundays written as 7', () => {
    assert.equal(iso(nextOccurrence('0 0 29 2 *', 'UTC', at('2026-01-01T00:00:00Z'))), '2028-02-29T00:00:00.000Z');
    assert.equal(new Date(nextOccurrence('0 0 * * 7', 'UTC', at('2026-01-01T00:00:00Z'))!).getUTCDay(), 0);
  });

  it('walks 1,000 consecutive occurrences in order, all matching', () => {
    let t = at('2026-03-07T20:00:00Z');
    for (let i = 0; i < 1000; i++) {
      const next = nextOccurrence('*/7 * * * *', 'America/New_York', t)!;
      assert.ok(next > t);
      assert.equal(new Date(next).getUTCMinutes() % 7, 0);
      t = next;
    }
  });

  it('reads a number with a step as "from there on, every step"', () => {
    let t = at('2026-01-01T10:00:00Z');
    const got: string[] = [];
    for (let i = 0; i < 5; i++) got.push(iso((t = nextOccurrence('5/15 * * * *', 'UTC', t)!))!.slice(11, 16));
    assert.deepEqual(got, ['10:05', '10:20', '10:35', '10:50', '11:05']);
  });

  it('answers null for invalid input', () => {
    assert.equal(nextOccurrence('nope', 'UTC', 0), null);
    assert.equal(nextOccurrence('0 0 * * *', 'Mars/Olympus', 0), null);
  });
});

describe('describeCron', () => {
  it('reads common schedules in words', () => {
    const cases: Array<[string, string]> = [
      ['*/15 * * * *', 'Every 15 minutes'],
      ['0 9 * * 1-5', 'At 09:00 on Monday through Friday'],
      ['0 9 * * *', 'Every day at 09:00'],
      ['@daily', 'Every day at 00:00'],
      ['@hourly', 'Every hour'],
      ['30 8 1 * *', 'At 08:30 on day 1 of the month'],
      ['0 */2 * * *', 'Every 2 hours'],
      ['* * * * *', 'Every minute'],
      ['0 0 1 1 *', 'At 00:00 on day 1 of the month in January'],
      ['0 0 1 12 *', 'At 00:00 on day 1 of the month in December'],
      ['0 0 1 oct-DEC *', 'At 00:00 on day 1 of the month in October through December'],
      ['0 9 * * mon-fri', 'At 09:00 on Monday through Friday'],
      ['0 9 * * 7', 'At 09:00 on Sunday'],
    ];
    for (const [expr, words] of cases) assert.equal(describeCron(expr), words, expr);
    assert.equal(describeCron('not cron'), 'not cron');
  });
});

/** `n` consecutive firings after `from`, as UTC date and minute, each strictly after the one before. */
function firings(expr: string, timezone: string, from: string, n: number): string[] {
  const got: string[] = [];
  let t = at(from);
  for (let i = 0; i < n; i++) {
    const next = nextOccurrence(expr, timezone, t);
    assert.ok(next !== null && next > t, `${expr} fires after ${iso(t)}`);
    got.push(iso((t = next))!.slice(0, 16));
  }
  return got;
}

/** Asserts the firings after `from`: as many as `expected` lists. */
const firesAt = (expr: string, timezone: string, from: string, expected: string[]) =>
  assert.deepEqual(firings(expr, timezone, from, expected.length), expected);

describe('DST, in Europe/Berlin and America/New_York (docs/design.md, "Schedules")', () => {
  // Berlin 2026-03-29: 02:00 CET jumps to 03:00 CEST at 01:00Z; 2026-10-25: 03:00 CEST falls back to 02:00 CET at 01:00Z.
  // New York 2026-03-08: 02:00 EST jumps to 03:00 EDT at 07:00Z; 2026-11-01: 02:00 EDT falls back to 01:00 EST at 06:00Z.

  it('fires a fixed time in the spring-forward gap once, at the jump', () => {
    firesAt('30 2 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z', ['2026-03-29T01:00', '2026-03-30T00:30']);
    firesAt('0 2 * * *', 'America/New_York', '2026-03-08T00:00:00Z', ['2026-03-08T07:00', '2026-03-09T06:00']);
  });

  it('fires a gap time of a list or a wildcard hour at the jump too, once', () => {
    firesAt('30 2,14 * * *', 'America/New_York', '2026-03-08T00:00:00Z', [
      '2026-03-08T07:00',
      '2026-03-08T18:30',
      '2026-03-09T06:30',
    ]);
    firesAt('30 * * * *', 'America/New_York', '2026-03-08T05:00:00Z', [
      '2026-03-08T05:30',
      '2026-03-08T06:30',
      '2026-03-08T07:00',
      '2026-03-08T07:30',
    ]);
    // 02:00, 02:15, 02:30 and 02:45 all fall into the gap: one firing at the jump stands for them.
    firesAt('*/15 * * * *', 'Europe/Berlin', '2026-03-29T00:40:00Z', [
      '2026-03-29T00:45',
      '2026-03-29T01:00',
      '2026-03-29T01:15',
    ]);
  });

  it('fires a fixed time that happens twice once, the first time', () => {
    firesAt('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', ['2026-10-25T00:30', '2026-10-26T01:30']);
    firesAt('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', ['2026-11-01T05:30', '2026-11-02T06:30']);
  });

  it('does not repeat the hour that happens twice for a list, a wildcard hour or a step', () => {
    firesAt('30 1,13 * * *', 'America/New_York', '2026-11-01T04:00:00Z', ['2026-11-01T05:30', '2026-11-01T18:30']);
    firesAt('0 * * * *', 'America/New_York', '2026-11-01T04:30:00Z', [
      '2026-11-01T05:00',
      '2026-11-01T07:00',
      '2026-11-01T08:00',
    ]);
    // Counted from inside the second pass (a late firing, a job saved then), its times have all fired already.
    firesAt('*/15 * * * *', 'America/New_York', '2026-11-01T06:10:00Z', ['2026-11-01T07:00', '2026-11-01T07:15']);
    firesAt('*/30 * * * *', 'Europe/Berlin', '2026-10-24T23:50:00Z', [
      '2026-10-25T00:00',
      '2026-10-25T00:30',
      '2026-10-25T02:00',
      '2026-10-25T02:30',
    ]);
  });

  it("differs from croner's own timezone mode exactly where docs/design.md says (why the wrapper maps wall times)", () => {
    const nativeFiresAt = (expr: string, timezone: string, from: string, expected: string[]) =>
      assert.deepEqual(
        new Cron(expr, { timezone, mode: '5-part' })
          .nextRuns(expected.length, new Date(from))
          .map((d) => iso(d.getTime())!.slice(0, 16)),
        expected,
      );
    // Fixed times agree.
    nativeFiresAt('30 2 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z', ['2026-03-29T01:00', '2026-03-30T00:30']);
    nativeFiresAt('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', ['2026-11-01T05:30', '2026-11-02T06:30']);
    // A list skips the gap time that day; a wildcard hour skips it; a repeated hour fires twice.
    nativeFiresAt('30 2,14 * * *', 'America/New_York', '2026-03-08T00:00:00Z', ['2026-03-08T18:30']);
    nativeFiresAt('30 * * * *', 'America/New_York', '2026-03-08T06:00:00Z', ['2026-03-08T06:30', '2026-03-08T07:30']);
    nativeFiresAt('0 * * * *', 'America/New_York', '2026-11-01T04:30:00Z', [
      '2026-11-01T05:00',
      '2026-11-01T06:00',
      '2026-11-01T07:00',
    ]);
    nativeFiresAt('30 1,13 * * *', 'America/New_York', '2026-11-01T04:00:00Z', [
      '2026-11-01T05:30',
      '2026-11-01T06:30',
    ]);
  });
});
