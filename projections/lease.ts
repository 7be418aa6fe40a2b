import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { DuplicateKeyError, type Doc, type DocumentStore } from '../store/document-store.js';
import { certainlyGone, processIdentity } from './lease-liveness.js';

const leaseCollection = 'projection_lease';
const leaseId = 'projector';

interface LeaseDoc extends Doc {
  holder: string;
  expiresAt: number;
  acquiredAt: number;
  /** The holder's process (`processIdentity`), so that a process on the same machine can tell it died. */
  process?: string | null;
}

export interface LeaseTimes {
  /** How long a lease holds without renewal: how long a dead holder keeps the others waiting. */
  ttlMs: number;
  /** How often the holder renews; well under the ttl so one slow write does not lose it. */
  renewMs: number;
  /** How often a standby process asks for the lease. */
  pollMs: number;
}

/** Takeover within about 11 s of a holder's death, renewals a few times per ttl (docs/design.md, "Projector lease"). */
export const defaultLeaseTimes: LeaseTimes = { ttlMs: 10_000, renewMs: 2_000, pollMs: 1_000 };

/** Who holds the lease, for errors and `GET /api/system/info`. */
export interface LeaseHolder {
  holder: string;
  expiresAt: number;
}

/**
 * The one-writer rule of the read models: a lease document with an expiry in the document store that every
 * projector process shares. Taking it is one conditional update (free, expired or already ours), or the insert of
 * the first lease, so two processes racing for it cannot both win.
 */
export class ProjectionLease {
  readonly holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly process = processIdentity();
  /** Until when this process may write, by its own clock; 0 when it does not hold the lease. */
  private validUntil = 0;

  constructor(
    private readonly docs: DocumentStore,
    readonly times: LeaseTimes = defaultLeaseTimes,
    private readonly clock: () => number = Date.now,
  ) {}

  private get collection() {
    return this.docs.collection<LeaseDoc>(leaseCollection);
  }

  /** True while the last acquisition or renewal still holds by this process's clock. */
  get held(): boolean {
    return this.validUntil > this.clock();
  }

  /**
   * Takes or renews the lease; false when another live process holds it. A holder that died on this machine (a
   * server killed and started again) is replaced at once, not after its ttl: a conditional update on the holder and
   * expiry read, so of two processes that see it dead only one takes it.
   */
  async acquire(): Promise<boolean> {
    const now = this.clock();
    const expiresAt = now + this.times.ttlMs;
    const mine = { holder: this.holder, expiresAt, process: this.process };
    const taken = await this.collection.updateOne(
      { _id: leaseId, $or: [{ holder: this.holder }, { expiresAt: { $lte: now } }] },
      { $set: mine },
    );
    let won = taken.matched === 1;
    if (!won) {
      const held = await this.collection.findOne({ _id: leaseId });
      if (held?.process && certainlyGone(held.process, this.process)) {
        const replaced = await this.collection.updateOne(
          { _id: leaseId, holder: held.holder, expiresAt: held.expiresAt },
          { $set: { ...mine, acquiredAt: now } },
        );
        won = replaced.matched === 1;
      } else if (!held) {
        try {
          await this.collection.insertOne({ _id: leaseId, ...mine, acquiredAt: now });
          won = true;
        } catch (err) {
          if (!(err instanceof DuplicateKeyError)) throw err;
        }
      }
    }
    // Validity counts from before the write: the stored expiry is never earlier than what this process believes.
    this.validUntil = won ? now + this.times.ttlMs - this.times.renewMs : 0;
    return won;
  }

  /** Gives the lease up at once, so a standby takes over at its next poll instead of after the ttl. */
  async release(): Promise<void> {
    this.validUntil = 0;
    await this.collection.deleteMany({ _id: leaseId, holder: this.holder });
  }

  /** The current holder, if the lease is live. */
  async current(): Promise<LeaseHolder | null> {
    const doc = await this.collection.findOne({ _id: leaseId });
    return doc && doc.expiresAt > this.clock() ? { holder: doc.holder, expiresAt: doc.expiresAt } : null;
  }
}
