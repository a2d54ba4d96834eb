import type { DeliveryOutcome } from '../../domain/emails/delivery-attempts.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/database.ts';
import type { Logger } from '../../platform/logger.ts';

/** What a destination's server last said to an organization's mail: the queue view's `last_response`. */
export type DestinationReply = {
  orgId: string;
  mode: string;
  destination: string;
  /** The shaping group the destination's MX belongs to ('' while unknown). */
  group: string;
  at: string;
  smtpCode: number | null;
  response: string;
  classification: string | null;
  delivered: boolean;
};

/** Replies are written in batches, at most this often. */
const FLUSH_MS = 1000;
/** Replies kept per destination and flush: a delivered reply only once, refusals and deferrals up to this. */
const REPLIES_PER_FLUSH = 20;
/** Recent replies are kept this long (the Queue screen's "recent replies"). */
const KEEP_REPLIES_MS = 24 * 3600_000;
const PRUNE_EVERY_MS = 10 * 60_000;

/**
 * The last reply per (organization, mode, destination) and recent replies, kept for the queue's view. They are
 * buffered and written once a second in two statements, whatever the rate of delivery: a lost batch (a crash)
 * only loses what the view shows, never what the email's stream records.
 */
export class DestinationLog {
  readonly #db: Database;
  readonly #log: Logger;
  readonly #clock: Clock;
  #buffer: DestinationReply[] = [];
  #timer?: NodeJS.Timeout;
  #writing: Promise<void> = Promise.resolve();
  #prunedAt = 0;

  constructor(o: { db: Database; log: Logger; clock: Clock }) {
    this.#db = o.db;
    this.#log = o.log;
    this.#clock = o.clock;
  }

  /** The servers' replies of an attempt at one destination, decided as the email records them. */
  noteOutcomes(
    where: { orgId: string; mode: string; destination: string; group: string; at: string },
    decided: DeliveryOutcome[],
  ): void {
    for (const o of decided)
      this.note({
        ...where,
        smtpCode: o.smtpCode ?? null,
        response: o.smtpResponse,
        classification: o.classification ?? null,
        delivered: o.result === 'delivered',
      });
  }

  note(reply: DestinationReply): void {
    this.#buffer.push(reply);
    this.#timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes what is buffered (and waits for a write under way). */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#buffer;
    this.#buffer = [];
    this.#writing = this.#writing.then(() => this.#write(batch));
    return this.#writing;
  }

  async #write(batch: DestinationReply[]): Promise<void> {
    if (batch.length === 0) return;
    const last = new Map<string, DestinationReply>();
    const kept = new Map<string, DestinationReply[]>();
    for (const r of batch) {
      const key = `${r.orgId} ${r.mode} ${r.destination}`;
      last.set(key, r);
      const list = kept.get(key) ?? [];
      const deliveredAlready = r.delivered && list.some((k) => k.delivered);
      if (!deliveredAlready) list.push(r);
      kept.set(key, list.slice(-REPLIES_PER_FLUSH));
    }
    try {
      await this.#db.query(
        `INSERT INTO delivery_destinations
           (org_id, mode, destination, grp, last_response, last_code, last_classification, last_at)
         SELECT "orgId", mode, destination, "group", response, "smtpCode", classification, at
         FROM json_to_recordset($1::json) AS x("orgId" text, mode text, destination text, "group" text,
           response text, "smtpCode" int, classification text, at timestamptz)
         ON CONFLICT (org_id, mode, destination) DO UPDATE SET grp = excluded.grp,
           last_response = excluded.last_response, last_code = excluded.last_code,
           last_classification = excluded.last_classification, last_at = excluded.last_at`,
        [JSON.stringify([...last.values()])],
      );
      await this.#db.query(
        `INSERT INTO delivery_replies (org_id, mode, destination, at, smtp_code, response, classification)
         SELECT "orgId", mode, destination, at, "smtpCode", response, classification
         FROM json_to_recordset($1::json) AS x("orgId" text, mode text, destination text, at timestamptz,
           "smtpCode" int, response text, classification text)`,
        [JSON.stringify([...kept.values()].flat())],
      );
      await this.#prune();
    } catch (err) {
      this.#log.warn({ err }, 'could not write the queue view of destination replies');
    }
  }

  async #prune(): Promise<void> {
    const now = this.#clock.now().getTime();
    if (Math.abs(now - this.#prunedAt) < PRUNE_EVERY_MS) return;
    this.#prunedAt = now;
    await this.#db.query('DELETE FROM delivery_replies WHERE at < $1', [new Date(now - KEEP_REPLIES_MS)]);
  }
}
