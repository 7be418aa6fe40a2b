import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
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
    ];
    for (const [expr, words] of cases) assert.equal(describeCron(expr), words, expr);
    assert.equal(describeCron('not cron'), 'not cron');
  });
});
