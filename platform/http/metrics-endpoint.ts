import { createHash, timingSafeEqual } from 'node:crypto';
import type express from 'express';
import { Gauge } from 'prom-client';
import type { Database } from '../db/database.ts';
import { AppError } from '../errors.ts';
import { stuckConsumers } from '../eventstore/parked-events.ts';
import { PostgresEventStore } from '../eventstore/postgres/store.ts';
import { registry } from '../metrics.ts';
import type { Services } from '../services.ts';

/*
 * `GET /metrics`: this process's counters (../metrics.ts) and gauges read from the database at scrape time (lag,
 * queue depths), which are the same whichever process answers.
 */

/** Lag is counted up to this many events: past it a consumer is far behind, and counting costs. */
const LAG_CAP = 10_000;
const CHECKPOINTS = `SELECT 'projection' AS kind, name, position FROM projection_checkpoints
  UNION ALL SELECT 'process', name, position FROM process_checkpoints`;
/**
 * Events of the log after each checkpoint, one index range scan each. Positions are `<tx_id>.<global_position>`,
 * zero-padded: the transaction id goes through bigint, as xid8 would read the leading zeros as octal.
 */
const LAG_SQL = `SELECT c.kind, c.name, (SELECT count(*) FROM (SELECT 1 FROM events e
    WHERE (e.tx_id, e.global_position) > (coalesce(nullif(split_part(c.position, '.', 1), ''), '0')::bigint::text::xid8,
                                          coalesce(nullif(split_part(c.position, '.', 2), ''), '0')::bigint)
    LIMIT ${LAG_CAP}) x)::int AS lag
  FROM (${CHECKPOINTS}) c`;

/** A queue's depth: a cheap count of a process's table (the processes own them: see bin/composition.ts). */
export type QueueDepths = Record<string, (db: Database, now: Date) => Promise<number>>;

/**
 * The outbound queue's messages per (destination, lane, state), for `postline_queue_messages`: the largest
 * destinations by name and the rest summed as `other` (processes/delivery/queue-view.ts).
 */
export type QueueMessages = (
  db: Database,
  now: Date,
) => Promise<{ destination: string; lane: string; state: string; count: number }[]>;

/** Where the scrape-time gauges read: the service whose /metrics is being scraped (one per process, but tests). */
let source: { services: Services; queues: QueueDepths; messages?: QueueMessages } | undefined;

/** A gauge computed at scrape time; when the database does not answer it is left out, the rest still served. */
function scrapeGauge<L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
  read: (s: NonNullable<typeof source>) => Promise<{ labels: Record<L, string>; value: number }[]>,
) {
  return new Gauge<L>({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      this.reset();
      if (!source) return;
      try {
        for (const { labels, value } of await read(source)) this.set(labels as any, value);
      } catch (err) {
        source.services.log.warn({ err, metric: name }, 'metric not collected');
      }
    },
  });
}

scrapeGauge(
  'postline_consumer_lag_events',
  `Events in the log after a projection's or process manager's checkpoint (counted up to ${LAG_CAP}).`,
  ['kind', 'name'],
  async ({ services: { db, store } }) => {
    if (store instanceof PostgresEventStore) {
      const { rows } = await db.query<{ kind: string; name: string; lag: number }>(LAG_SQL);
      return rows.map((r) => ({ labels: { kind: r.kind, name: r.name }, value: r.lag }));
    }
    // The log is elsewhere (KurrentDB): read it through the store (a position of '' is the start).
    const { rows } = await db.query<{ kind: string; name: string; position: string }>(CHECKPOINTS);
    return Promise.all(
      rows.map(async (r) => ({
        labels: { kind: r.kind, name: r.name },
        value: (await store.readAll({ from: r.position, limit: LAG_CAP })).length,
      })),
    );
  },
);

scrapeGauge(
  'postline_parked_events',
  'Events a projection or process manager failed on and parked, retried with back-off until they apply (alert on > 0).',
  ['consumer'],
  async ({ services }) =>
    (await stuckConsumers(services.db)).map((c) => ({
      labels: { consumer: c.consumer },
      value: c.parked_events,
    })),
);

scrapeGauge(
  'postline_queue_depth',
  'Work waiting in a queue: deliveries and webhook attempts due now, emails scheduled for later.',
  ['queue'],
  ({ services, queues }) => {
    const now = services.clock.now();
    return Promise.all(
      Object.entries(queues).map(async ([queue, depth]) => ({
        labels: { queue },
        value: await depth(services.db, now),
      })),
    );
  },
);

scrapeGauge(
  'postline_queue_messages',
  'Messages waiting for delivery per destination (the 50 with the most mail; the rest as "other"), lane and state (queued, deferred, held, in_flight).',
  ['destination', 'lane', 'state'],
  async ({ services, messages }) =>
    (messages ? await messages(services.db, services.clock.now()) : []).map((r) => ({
      labels: { destination: r.destination, lane: r.lane ?? '', state: r.state },
      value: r.count,
    })),
);

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Mounts `GET /metrics` (Prometheus text format). With METRICS_TOKEN set it needs `Authorization: Bearer <token>`,
 * else 401 `invalid_metrics_token`.
 */
export function mountMetrics(
  app: express.Express,
  services: Services,
  queues: QueueDepths,
  messages?: QueueMessages,
): void {
  const token = services.config.METRICS_TOKEN;
  app.get('/metrics', async (req, res) => {
    if (token) {
      const presented = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')?.[1] ?? '';
      if (!timingSafeEqual(digest(presented), digest(token)))
        throw new AppError('invalid_metrics_token', 'Send Authorization: Bearer <METRICS_TOKEN>.');
    }
    source = { services, queues, messages };
    res.type(registry.contentType).send(await registry.metrics());
  });
}
