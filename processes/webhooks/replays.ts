import { subscriptionMatches } from '../../domain/webhooks/event-types.ts';
import { DueQueue } from '../../platform/due/due-queue.ts';
import type { DueTable } from '../../platform/due/due-sql.ts';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { insertDeliveries, newDelivery, resetDeliveries, wakeDispatchersAtCommit } from './deliveries.ts';
import type { EmailSummaries } from './email-summaries.ts';
import { isEmailSourced, PUBLIC_TYPE_OF, publicData } from './public-events.v1.ts';

/** A replay as its due row holds it: due at its request, its cursor moved with each batch. */
export interface Replay {
  id: string;
  webhook_id: string;
  since: Date;
  until: Date | null;
  up_to: string;
  cursor: string;
}

export const REPLAYS: DueTable = {
  table: 'webhook_replays',
  key: { id: 'text' },
  dueAt: 'requested_at',
  columns: ['webhook_id', 'since', 'until', 'up_to', 'cursor'],
  leaseMs: 60_000,
};

interface Endpoint {
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
 * de-duplicate; events that never had one (the endpoint was off) get one, under the id derived from it. The log
 * is read in short batches, each committed with the replay's cursor, so no long transaction holds back the
 * log's readers; a replay's due row goes once it reached its end.
 */
export class WebhookReplays {
  readonly #services: Services;
  readonly #summaries: EmailSummaries;
  readonly #batchSize: number;
  readonly due: DueQueue<Replay>;

  constructor(services: Services, summaries: EmailSummaries, batchSize = 500) {
    this.#services = services;
    this.#summaries = summaries;
    this.#batchSize = batchSize;
    this.due = new DueQueue(services, REPLAYS);
  }

  /** Works the replays due, oldest first, each to its end; resolves with how many deliveries they recorded or reset. */
  run(signal?: AbortSignal): Promise<number> {
    return this.due.drain({ batch: 1, concurrency: 1, signal }, (rows) =>
      rows.map((replay) => async () => {
        const saved = await this.#replay(replay);
        this.due.finish(replay, null);
        return saved;
      }),
    );
  }

  async #replay(replay: Replay): Promise<number> {
    let saved = 0;
    for (let cursor: string | null = replay.cursor; cursor !== null; ) {
      const step = await this.#step(replay, cursor);
      saved += step.saved;
      cursor = step.next;
    }
    return saved;
  }

  /**
   * One batch of the log from `cursor`: resolves with how many deliveries it recorded or reset, and the cursor to
   * go on from (null at the end). A cursor that moved meanwhile (another process) is where it goes on from.
   */
  async #step(replay: Replay, cursor: string): Promise<{ saved: number; next: string | null }> {
    const { db, clock, store } = this.#services;
    const { rows: found } = await db.query<Endpoint>(
      'SELECT org_id, mode, events, active, deleted FROM webhook_endpoints WHERE webhook_id = $1',
      [replay.webhook_id],
    );
    const endpoint = found[0];
    const live = endpoint?.active && !endpoint.deleted;
    const events = live ? await store.readAll({ from: cursor, limit: this.#batchSize }) : [];
    const inRange = events.filter((e) => e.position <= replay.up_to);
    const done =
      inRange.length === 0 ||
      inRange.length < events.length ||
      inRange[inRange.length - 1].position === replay.up_to;
    const matching = live ? this.#matching(replay, endpoint, inRange) : [];
    const summaries = await this.#summaries.of(db, matching);
    const now = clock.now();
    const deliveries = matching.flatMap((e) => {
      const data = publicData(e, isEmailSourced(e) ? (summaries.get(e.data.emailId) ?? null) : null);
      const to = { webhookId: replay.webhook_id, orgId: endpoint.org_id, mode: endpoint.mode };
      return data ? [newDelivery(to, e, PUBLIC_TYPE_OF[e.type], data)] : [];
    });
    const next = inRange.length ? inRange[inRange.length - 1].position : cursor;
    return db.transaction(async (tx) => {
      const { rows } = await tx.query<{ cursor: string }>(
        'SELECT cursor FROM webhook_replays WHERE id = $1 FOR UPDATE',
        [replay.id],
      );
      if (rows.length === 0) return { saved: 0, next: null };
      if (rows[0].cursor !== cursor) return { saved: 0, next: rows[0].cursor };
      // Events the endpoint never got are recorded; those it got go back to pending, unless they still are.
      const recorded = new Set(await insertDeliveries(tx, deliveries, now));
      const others = deliveries.filter((d) => !recorded.has(d.id)).map((d) => d.id);
      const saved = recorded.size + (await resetDeliveries(tx, replay.webhook_id, others, now, true)).length;
      await tx.query('UPDATE webhook_replays SET cursor = $2 WHERE id = $1', [replay.id, next]);
      if (saved > 0) wakeDispatchersAtCommit(tx);
      return { saved, next: done ? null : next };
    });
  }

  /** The events of the replay's range that the endpoint's current subscription takes. */
  #matching(replay: Replay, endpoint: Endpoint, events: StoredEvent[]): StoredEvent[] {
    const since = new Date(replay.since).getTime();
    const until = replay.until ? new Date(replay.until).getTime() : Number.POSITIVE_INFINITY;
    return events.filter((e) => {
      const type = PUBLIC_TYPE_OF[e.type];
      const at = e.createdAt.getTime();
      return (
        type &&
        e.metadata.orgId === endpoint.org_id &&
        e.metadata.mode === endpoint.mode &&
        at >= since &&
        at <= until &&
        subscriptionMatches(endpoint.events, type)
      );
    });
  }
}
