import { dayMs, hourMs, summarize, type BucketRun, type BucketTotals } from '../../domain/stats.js';
import {
  dayHours,
  dayTotals,
  decodeDurations,
  fromHourRun,
  hourRevOf,
  hourRuns,
  type StatsDayDoc,
  type StatsHourDoc,
  type StatsRevsDoc,
} from '../../projections/stats-buckets.js';
import {
  bucketId,
  dayRevs,
  hourSliceIds,
  revsIds,
  statsDaysCollection,
  statsHoursCollection,
  statsRevsCollection,
} from '../../projections/stats.js';
import type { DocumentStore } from '../../store/document-store.js';

/** A UTC day of the read model as the overview reads it. */
export interface DayView {
  start: number;
  totals: BucketTotals;
  /** The revisions of its hours with runs, by hour start. */
  hours: ReadonlyMap<number, string>;
  /** Its msTotal values, ascending; decoded on first use. */
  durations(): ArrayLike<number>;
}

/** An hour of the read model: its runs in queue order, and what they sum to. */
export interface HourView {
  start: number;
  runs: readonly BucketRun[];
  totals: BucketTotals;
  durations: readonly number[];
}

interface Entry {
  rev: string;
  view: DayView | HourView;
  weight: number;
}

/** Bytes the cache may hold by default, estimated: 90 days of 1,100 runs a day take about 1.5 MB. */
const defaultMaxBytes = 16 * 1024 * 1024;

/**
 * Day and hour buckets already read and parsed, each kept with the revision it was read at (docs/design.md, "Stats").
 * A request learns the current revisions from the store (the `stats_revs` documents, then each day's list of hour
 * revisions), so an entry is used only while the store still names its content: correct in every process, whichever
 * one projects, and nothing needs to tell it about a change. Least recently used entries go first past the bound.
 */
export class StatsBucketCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(private readonly maxBytes = defaultMaxBytes) {}

  get<T extends DayView | HourView>(key: string, rev: string): T | undefined {
    const e = this.entries.get(key);
    if (!e || e.rev !== rev) return undefined;
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.view as T;
  }

  set(key: string, rev: string, view: DayView | HourView, weight: number): void {
    const old = this.entries.get(key);
    if (old) {
      this.bytes -= old.weight;
      this.entries.delete(key);
    }
    if (weight > this.maxBytes) return;
    this.entries.set(key, { rev, view, weight });
    this.bytes += weight;
    for (const [k, e] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.bytes -= e.weight;
    }
  }

  /** Entries held and their estimated bytes (for the benchmark). */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}

const floorDay = (t: number) => Math.floor(t / dayMs) * dayMs;

/**
 * One request's reads of a workspace's buckets: the day revisions of the span it may touch first, then the days and
 * hours it needs, each read once and only when the cache does not hold its current revision.
 */
export class BucketReader {
  private readonly revs = new Map<number, string>();
  private readonly days = new Map<number, DayView>();
  private readonly hours = new Map<number, HourView>();

  constructor(
    private readonly docs: DocumentStore,
    private readonly workspaceId: string,
    private readonly cache: StatsBucketCache,
  ) {}

  /** Reads the revisions of the days of [from, to): days without one have no runs. */
  async span(from: number, to: number): Promise<void> {
    const blocks = await this.docs
      .collection<StatsRevsDoc>(statsRevsCollection)
      .find({ _id: { $in: revsIds(this.workspaceId, from, to) } });
    for (const b of blocks) for (const [day, rev] of dayRevs(b)) this.revs.set(day, rev);
  }

  /** Loads the given days, then the given hours (and the days holding them, for their hours' revisions). */
  async load(days: Iterable<number>, hours: Iterable<number>): Promise<void> {
    const hourList = [...hours];
    await this.loadDays([...days, ...hourList.map(floorDay)]);
    await this.loadHours(hourList);
  }

  /** The days of the span read that have runs, in order. */
  daysWithRuns(): number[] {
    return [...this.revs.keys()].sort((a, b) => a - b);
  }

  day(start: number): DayView | undefined {
    return this.days.get(start);
  }

  hour(start: number): HourView | undefined {
    return this.hours.get(start);
  }

  /** Hours of a loaded day that have runs, in order. */
  hoursOf(day: number): number[] {
    return [...(this.days.get(day)?.hours.keys() ?? [])].sort((a, b) => a - b);
  }

  private async loadDays(starts: number[]): Promise<void> {
    const missing: string[] = [];
    for (const start of new Set(starts)) {
      if (this.days.has(start)) continue;
      const rev = this.revs.get(start);
      if (rev === undefined) continue;
      const cached = this.cache.get<DayView>(this.key('d', start), rev);
      if (cached) this.days.set(start, cached);
      else missing.push(bucketId(this.workspaceId, start));
    }
    if (missing.length === 0) return;
    const docs = await this.docs.collection<StatsDayDoc>(statsDaysCollection).find({ _id: { $in: missing } });
    for (const doc of docs) {
      const view = dayView(doc);
      this.days.set(doc.start, view);
      const weight = 200 + doc.durations.length * 6 + view.totals.jobs.length * 120 + view.hours.size * 60;
      this.cache.set(this.key('d', doc.start), doc.rev, view, weight);
    }
  }

  private async loadHours(starts: number[]): Promise<void> {
    const missing = new Set<number>();
    for (const start of new Set(starts)) {
      if (this.hours.has(start)) continue;
      const rev = this.days.get(floorDay(start))?.hours.get(start);
      if (rev === undefined) continue;
      const cached = this.cache.get<HourView>(this.key('h', start), rev);
      if (cached) this.hours.set(start, cached);
      else missing.add(start);
    }
    if (missing.size === 0) return;
    // An hour's runs are in slices of it (`sliceMs`), each in queue order and the slices in time order.
    const ids = [...missing].flatMap((hour) => hourSliceIds(this.workspaceId, hour));
    const slices = (await this.docs.collection<StatsHourDoc>(statsHoursCollection).find({ _id: { $in: ids } })).sort(
      (a, b) => a.start - b.start,
    );
    const byHour = new Map<number, { runs: BucketRun[]; revs: Array<[number, string]> }>();
    for (const slice of slices) {
      const hour = Math.floor(slice.start / hourMs) * hourMs;
      let h = byHour.get(hour);
      if (!h) byHour.set(hour, (h = { runs: [], revs: [] }));
      for (const r of hourRuns(slice)) h.runs.push(fromHourRun(r));
      h.revs.push([slice.start, slice.rev]);
    }
    for (const [start, { runs, revs }] of byHour) {
      const view: HourView = { start, runs, ...summarize(runs) };
      this.hours.set(start, view);
      // The revision of what was read: a slice may be newer than the day read before it.
      this.cache.set(this.key('h', start), hourRevOf(revs), view, 200 + runs.length * 300);
    }
  }

  private key(kind: 'd' | 'h', start: number): string {
    return `${this.workspaceId}:${kind}:${start}`;
  }
}

function dayView(doc: StatsDayDoc): DayView {
  let decoded: Float64Array | null = null;
  return {
    start: doc.start,
    totals: dayTotals(doc),
    hours: new Map(dayHours(doc)),
    durations: () => (decoded ??= decodeDurations(doc.durations)),
  };
}
