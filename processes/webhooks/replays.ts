import { subscriptionMatches } from '../../domain/webhooks/event-types.ts';
import type { EventStore } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { insertDeliveries, newDelivery, resetDeliveries, wakeDispatchersAtCommit } from './deliveries.ts';
import type { EmailSummaries } from './email-summaries.ts';
import { isEmailSourced, PUBLIC_TYPE_OF, publicData } from './public-events.v1.ts';

interface ReplayRow {
  id: string;
  webhook_id: string;
  since: Date;
  until: Date | null;
  up_to: string;
  cursor: string;
  org_id: string;
  mode: string;
  events: string[];
  active: boolean;
  deleted: boolean;
}

/**
 * Operator replays ("my endpoint was down for a day"): every event of the endpoint's current subscription that
 * occurred in [since, until] is delivered again, up to the position of the replay request (later events reach
 * the endpoint through the normal fan-out). Deliveries keep their original `whl_` id so receivers can
 * de-duplicate; events that never had one (the endpoint was off) get one, under the id derived from it. The log is read in short batches, each
 * committed with the replay's cursor, so no long transaction holds back the log's readers.
 */
export class WebhookReplays {
  readonly #services: Services;
  readonly #store: EventStore;
  readonly #summaries: EmailSummaries;
  readonly #batchSize: number;

  /** `store` reads the log with the email summaries of its batches cached (EmailSummaries.readingThrough). */
  constructor(services: Services, store: EventStore, summaries: EmailSummaries, batchSize = 500) {
    this.#services = services;
    this.#store = store;
    this.#summaries = summaries;
    this.#batchSize = batchSize;
  }

  /** Works the pending replays to their end; resolves with how many deliveries they recorded or reset. */
  async run(): Promise<number> {
    let replayed = 0;
    for (;;) {
      const { rows } = await this.#services.db.query<ReplayRow>(
        `SELECT r.id, r.webhook_id, r.since, r.until, r.up_to, r.cursor, e.org_id, e.mode, e.events, e.active, e.deleted
         FROM webhook_replays r JOIN webhook_endpoints e ON e.webhook_id = r.webhook_id
         WHERE NOT r.done ORDER BY r.id LIMIT 1`,
      );
      if (rows.length === 0) return replayed;
      replayed += await this.#step(rows[0]);
    }
  }

  /**
   * One batch of one replay, resolving with how many deliveries it recorded or reset; a cursor that moved meanwhile
   * (another process) makes it a no-op.
   */
  async #step(replay: ReplayRow): Promise<number> {
    const { db, clock } = this.#services;
    const events =
      replay.active && !replay.deleted
        ? await this.#store.readAll({ from: replay.cursor, limit: this.#batchSize })
        : [];
    const inRange = events.filter((e) => e.position <= replay.up_to);
    const done =
      inRange.length === 0 ||
      inRange.length < events.length ||
      inRange[inRange.length - 1].position === replay.up_to;
    const since = new Date(replay.since).getTime();
    const until = replay.until ? new Date(replay.until).getTime() : Number.POSITIVE_INFINITY;
    const matching = inRange.filter((e) => {
      const type = PUBLIC_TYPE_OF[e.type];
      const at = e.createdAt.getTime();
      return (
        type &&
        e.metadata.orgId === replay.org_id &&
        e.metadata.mode === replay.mode &&
        at >= since &&
        at <= until &&
        subscriptionMatches(replay.events, type)
      );
    });
    const now = clock.now();
    const deliveries = matching.flatMap((e) => {
      const data = publicData(e, isEmailSourced(e) ? this.#summaries.get(e.data.emailId) : null);
      const endpoint = { webhookId: replay.webhook_id, orgId: replay.org_id, mode: replay.mode };
      return data ? [newDelivery(endpoint, e, PUBLIC_TYPE_OF[e.type], data)] : [];
    });
    return db.transaction(async (tx) => {
      const { rows } = await tx.query<{ cursor: string }>(
        'SELECT cursor FROM webhook_replays WHERE id = $1 FOR UPDATE',
        [replay.id],
      );
      if (rows[0]?.cursor !== replay.cursor) return 0;
      // Events the endpoint never got are recorded; those it got go back to pending, unless they still are.
      const recorded = new Set(await insertDeliveries(tx, deliveries, now));
      const others = deliveries.filter((d) => !recorded.has(d.id)).map((d) => d.id);
      const saved = recorded.size + (await resetDeliveries(tx, replay.webhook_id, others, now, true)).length;
      await tx.query(
        'UPDATE webhook_replays SET cursor = $2, replayed = replayed + $3, done = $4 WHERE id = $1',
        [replay.id, inRange.length ? inRange[inRange.length - 1].position : replay.cursor, saved, done],
      );
      if (saved > 0) wakeDispatchersAtCommit(tx);
      return saved;
    });
  }
}
