/**
 * `npm run bench:store`: the event store on PostgreSQL against a raw baseline measured in the same run.
 *
 * - appends/s with 1 and with 16 concurrent writers: each append is one event to a stream of its own with an
 *   expected revision (`no_stream`, as a command that creates an aggregate does), through `PostgresEventStore`;
 *   baseline: plain `INSERT`s of the same rows, at the same concurrency, into a plain table of the same shape.
 * - subscriber catch-up events/s: `subscribe({ from: START })` over a seeded log until `caughtUp()`;
 *   baseline: a plain keyset read (`global_position > $1 ORDER BY global_position LIMIT 500`) of the same rows.
 *
 * Settings (environment): BENCH_SECONDS per append measurement (default 6,
 * spent in 3 alternating rounds), BENCH_EVENTS for catch-up
 * (default 50000), BENCH_BACKENDS (default `postgres`), TEST_DATABASE_ADMIN_URL (as the tests).
 * See bench/README.md.
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { connectPostgres, type Database } from '../platform/db/database.ts';
import { eventStoreMigrations } from '../platform/eventstore/postgres/schema.ts';
import { PostgresEventStore } from '../platform/eventstore/postgres/store.ts';
import { START } from '../platform/eventstore/types.ts';
import { createTestDatabaseUrl } from '../test/support/databases.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50_000);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'postgres').split(',').map((s) => s.trim());
const WRITERS = [1, 16];
const ROUNDS = 3;
const BATCH = 500;

// The same rows for Postline and for the baseline: an EmailQueued of a realistic size.
const TYPE = 'EmailQueued';
const METADATA = {
  orgId: 'org_01JBENCH0000000000000000',
  mode: 'live',
  actor: 'key_01JBENCH000000000000000',
};
const DATA = {
  emailId: 'em_01JBENCH0000000000000000',
  from: 'Acme <hello@acme.example>',
  to: ['someone@example.com'],
  subject: 'Your order has shipped',
  html: '<p>Hello, your order <b>#1234</b> is on its way.</p>',
  text: 'Hello, your order #1234 is on its way.',
  tags: [{ name: 'category', value: 'shipping' }],
  queuedAt: '2025-01-01T00:00:00.000Z',
};
const DATA_JSON = JSON.stringify(DATA);
const METADATA_JSON = JSON.stringify(METADATA);

/**
 * The baseline's table: `events` as its migration creates it, under another name and keyed by its position alone
 * (what the keyset read pages by), so that its columns, types, defaults and (stream, revision) key never drift.
 */
function rawSchema(): string[] {
  const table = eventStoreMigrations[0].sql
    .replace('CREATE TABLE events (', 'CREATE TABLE raw_events (')
    .replace('PRIMARY KEY (tx_id, global_position)', 'PRIMARY KEY (global_position)');
  if (!table.includes('raw_events') || !table.includes('PRIMARY KEY (global_position)'))
    throw new Error('The events migration changed shape: adapt the baseline table in bench/store.bench.ts');
  return ['DROP TABLE IF EXISTS raw_events', table];
}
const RAW_INSERT = `INSERT INTO raw_events (stream_id, stream_revision, type, data, metadata) VALUES ($1, 0, $2, $3, $4)`;
const RAW_READ = `SELECT global_position, tx_id::text AS tx, stream_id, stream_revision, type, data, metadata, created_at
  FROM raw_events WHERE global_position > $1 ORDER BY global_position LIMIT ${BATCH}`;
/** `count` rows in transactions of 1,000 (a log written by many transactions), into `table`. */
const seedSql = (table: string, from: number, count: number) => `
  INSERT INTO ${table} (stream_id, stream_revision, type, data, metadata)
  SELECT 'email-seed-' || (g / 5), g % 5, '${TYPE}', '${DATA_JSON.replaceAll("'", "''")}'::json, '${METADATA_JSON}'::json
  FROM generate_series(${from}, ${from + count - 1}) AS g`;

/** What the baseline needs from a connection: a parameterised query. */
interface Raw {
  query(sql: string, params?: unknown[]): Promise<{ rows: any[] }>;
  close(): Promise<void>;
}

interface Backend {
  name: string;
  db: Database;
  raw: Raw;
  close(): Promise<void>;
}

async function openBackend(name: string): Promise<Backend> {
  if (name === 'postgres') {
    const { url, drop } = await createTestDatabaseUrl();
    // Pools as large as the largest number of writers, for Postline and for the baseline alike.
    const db = connectPostgres(url, Math.max(...WRITERS));
    const pool = new pg.Pool({ connectionString: url, max: Math.max(...WRITERS) });
    // An idle client's error (the server closing it) surfaces on the next query; unhandled, it would end the run.
    pool.on('error', (err) => console.error(`baseline pool: ${err.message}`));
    return {
      name: 'PostgreSQL',
      db,
      raw: { query: (sql, params) => pool.query(sql, params), close: () => pool.end() },
      close: async () => {
        await db.close();
        await pool.end().catch(() => {});
        await drop();
      },
    };
  }
  throw new Error(`unknown backend ${name} (postgres)`);
}

/** Runs `writers` loops of `op` for `seconds`; returns operations per second. */
async function rate(writers: number, seconds: number, op: (writer: number, i: number) => Promise<void>) {
  let done = 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; performance.now() < deadline; i++) {
        await op(w, i);
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

interface Row {
  backend: string;
  measure: string;
  postline: number;
  raw: number;
  aim?: string;
  met?: boolean;
}

async function bench(name: string): Promise<Row[]> {
  const backend = await openBackend(name);
  const rows: Row[] = [];
  try {
    const store = await PostgresEventStore.create(backend.db, { pollMs: 1000 });
    for (const sql of rawSchema()) await backend.raw.query(sql);
    let run = 0;
    const append = (tag: string) => (w: number, i: number) =>
      store
        .append(`email-${tag}-${w}-${i}`, [{ type: TYPE, data: DATA, metadata: METADATA as any }], {
          expectedRevision: 'no_stream',
        })
        .then(() => {});
    const insert = (tag: string) => (w: number, i: number) =>
      backend.raw
        .query(RAW_INSERT, [`email-${tag}-${w}-${i}`, TYPE, DATA_JSON, METADATA_JSON])
        .then(() => {});

    // Warm up both paths (plans, caches, connections).
    await rate(4, 0.5, append('warm'));
    await rate(4, 0.5, insert('warm'));

    for (const writers of WRITERS) {
      // Alternate the two, ROUNDS times, so that a slow moment of the disk does not favour either.
      let raw = 0;
      let postline = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const tag = `r${run++}`;
        raw += (await rate(writers, SECONDS / ROUNDS, insert(tag))) / ROUNDS;
        postline += (await rate(writers, SECONDS / ROUNDS, append(tag))) / ROUNDS;
      }
      rows.push({
        backend: backend.name,
        measure: `appends/s, ${writers} writer${writers > 1 ? 's' : ''}`,
        postline,
        raw,
        aim: '>= 50% of raw',
        met: postline >= raw * 0.5,
      });
      console.error(
        `  ${backend.name}: ${writers} writer(s): ${postline.toFixed(0)}/s vs raw ${raw.toFixed(0)}/s`,
      );
    }

    // Catch-up over a log of EVENTS events (the same rows in both tables).
    await backend.db.exec('TRUNCATE events RESTART IDENTITY');
    await backend.raw.query('TRUNCATE raw_events RESTART IDENTITY');
    for (let i = 0; i < EVENTS; i += 1000) {
      await backend.db.exec(seedSql('events', i, Math.min(1000, EVENTS - i)));
      await backend.raw.query(seedSql('raw_events', i, Math.min(1000, EVENTS - i)));
    }
    await backend.db.exec('VACUUM ANALYZE events');
    await backend.raw.query('VACUUM ANALYZE raw_events');

    let rawCount = 0;
    let t = performance.now();
    for (let last = 0; ; ) {
      const { rows: page } = await backend.raw.query(RAW_READ, [last]);
      rawCount += page.length;
      if (page.length < BATCH) break;
      last = Number(page[page.length - 1].global_position);
    }
    const raw = rawCount / ((performance.now() - t) / 1000);

    // Wait for every event, not for caughtUp(): the snapshot's xmin is cluster-wide, so a long transaction of
    // someone else's on the same server can make the visible head lag behind what was seeded.
    let count = 0;
    let allSeen!: () => void;
    const done = new Promise<void>((resolve) => {
      allSeen = resolve;
    });
    t = performance.now();
    const sub = store.subscribe({ from: START, batchSize: BATCH }, async (events) => {
      count += events.length;
      if (count >= EVENTS) allSeen();
    });
    await done;
    const postline = count / ((performance.now() - t) / 1000);
    await sub.stop();
    if (count !== EVENTS || rawCount !== EVENTS)
      throw new Error(`catch-up read ${count}, raw ${rawCount}, of ${EVENTS}`);
    rows.push({
      backend: backend.name,
      measure: `catch-up events/s (${EVENTS} events)`,
      postline,
      raw,
      aim: name === 'postgres' ? '>= 20,000/s' : undefined,
      met: name === 'postgres' ? postline >= 20_000 : undefined,
    });
    console.error(`  ${backend.name}: catch-up ${postline.toFixed(0)}/s vs raw ${raw.toFixed(0)}/s`);
    await store.close();
  } finally {
    await backend.close();
  }
  return rows;
}

function table(rows: Row[]) {
  const head = ['backend', 'measure', 'Postline', 'raw baseline', 'ratio', 'aim', 'met'];
  const body = rows.map((r) => [
    r.backend,
    r.measure,
    Math.round(r.postline).toLocaleString('en-US'),
    Math.round(r.raw).toLocaleString('en-US'),
    `${((r.postline / r.raw) * 100).toFixed(0)}%`,
    r.aim ?? '',
    r.met === undefined ? '' : r.met ? 'yes' : 'NO',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

const started = performance.now();
console.error(
  `bench:store: ${SECONDS}s per append measurement, ${EVENTS} events for catch-up, on ${BACKENDS.join(', ')}`,
);
const rows: Row[] = [];
for (const name of BACKENDS) rows.push(...(await bench(name)));
console.log(
  `\n${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), Node ${process.version}, ${os.platform()} ${os.release()}\n`,
);
console.log(table(rows));
console.log(`\n(${((performance.now() - started) / 1000).toFixed(0)}s)`);
