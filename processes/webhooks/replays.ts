import type { StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { subscriptionMatches } from '../../write-side/webhooks/event-types.ts';
import {
  DELIVERIES_CHANNEL,
  deliveriesRecorded,
  newDelivery,
  resetDeliveries,
  sourceKeyOf,
} from './deliveries.ts';
import type { EmailSummaries } from './email-summaries.ts';
import { PUBLIC_TYPE_OF, publicData } from './public-events.v1.ts';

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
 * de-duplicate; events that never had one (the endpoint was off) get one. The log is read in short batches, each
 * committed with the replay's cursor, so no long transaction holds back the log's readers.
 */
export class WebhookReplays {
  readonly #services: Services;
  readonly #summaries: EmailSummaries;
  readonly #batchSize: number;

  constructor(services: Services, summaries: EmailSummaries, batchSize = 500) {
    this.#services = services;
    this.#summaries = summaries;
    this.#batchSize = batchSize;
  }

  async run(): Promise<void> {
    for (;;) {
      const { rows } = await this.#services.db.query<ReplayRow>(
        `SELECT r.id, r.webhook_id, r.since, r.until, r.up_to, r.cursor, e.org_id, e.mode, e.events, e.active, e.deleted
         FROM webhook_replays r JOIN webhook_endpoints e ON e.webhook_id = r.webhook_id
         WHERE NOT r.done ORDER BY r.id LIMIT 1`,
      );
      if (rows.length === 0) return;
      await this.#step(rows[0]);
    }
  }

  /** Ids of deliveries of these events recorded before ids were derived from their source (see delivery-ids.ts). */
  async #legacyIds(webhookId: string, events: StoredEvent[]): Promise<Map<string, string>> {
    if (events.length === 0) return new Map();
    const { rows } = await this.#services.db.query<{ source_key: string; id: string }>(
      'SELECT source_key, id FROM webhook_legacy_delivery_ids WHERE webhook_id = $1 AND source_key = ANY($2)',
      [webhookId, events.map(sourceKeyOf)],
    );
    return new Map(rows.map((r) => [r.source_key, r.id]));
  }

  /** One batch of one replay; a cursor that moved meanwhile (another process) makes it a no-op. */
  async #step(replay: ReplayRow): Promise<void> {
    const { db, store, clock } = this.#services;
    const events =
      replay.active && !replay.deleted
        ? await store.readAll({ from: replay.cursor, limit: this.#batchSize })
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
    await this.#summaries.load(matching);
    const legacy = await this.#legacyIds(replay.webhook_id, matching);
    const now = clock.now();
    const deliveries = matching.flatMap((e) => {
      const data = publicData(e, e.data.emailId ? this.#summaries.get(e.data.emailId) : null);
      const endpoint = { webhookId: replay.webhook_id, orgId: replay.org_id, mode: replay.mode };
      const legacyId = legacy.get(sourceKeyOf(e));
      return data ? [newDelivery(endpoint, e, PUBLIC_TYPE_OF[e.type], data, legacyId)] : [];
    });
    const saved = await db.transaction(async (tx) => {
      const { rows } = await tx.query<{ cursor: string }>(
        'SELECT cursor FROM webhook_replays WHERE id = $1 FOR UPDATE',
        [replay.id],
      );
      if (rows[0]?.cursor !== replay.cursor) return 0;
      const saved = (await resetDeliveries(tx, deliveries, now)).length;
      await tx.query(
        'UPDATE webhook_replays SET cursor = $2, replayed = replayed + $3, done = $4 WHERE id = $1',
        [replay.id, inRange.length ? inRange[inRange.length - 1].position : replay.cursor, saved, done],
      );
      if (saved > 0) await tx.query('SELECT pg_notify($1, $2)', [DELIVERIES_CHANNEL, '']);
      return saved;
    });
    if (saved > 0) deliveriesRecorded.emit('recorded');
  }
}
