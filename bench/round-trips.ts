/**
 * Round trips per message: what a flow asks of PostgreSQL and of the disk for each message, counted in a run of
 * its own (not the timed one) on a private PostgreSQL server (the embedded one's binaries, in a temporary
 * directory) loaded with `pg_stat_statements`. Read before and after the run, divided by the messages:
 *
 * - statements: `pg_stat_statements` calls in the service's database (every connection, the projections' worker
 *   thread and every process alike), the top ones by calls, each with the time PostgreSQL spent planning and
 *   running it per message; BEGIN and COMMIT count as statements;
 * - commits: `pg_stat_database.xact_commit` (an autocommitted statement is a transaction of its own);
 * - WAL syncs and writes: `pg_stat_io` for the WAL (PostgreSQL 18), all processes of the server;
 * - blob syncs: the service's `postline_blob_syncs_total` (file, folder), read from its Prometheus text.
 *
 * Statistics reach the views once a backend reports them, at most a second after its transaction: both readings
 * wait for that. Pollers that run while the flow does (the projections, the due queue) count with it.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startEmbeddedPostgres } from '../platform/db/embedded-postgres.ts';
import { freePort, startServer } from '../test/support/process.ts';
import { processCpu } from './cpu.ts';
import { quiet } from './peers/processes.ts';

/** PostgreSQL reports a backend's statistics at most this often (PGSTAT_MIN_INTERVAL), and when it goes idle. */
const STATS_REPORT_MS = 1_200;
/** How many statements are listed (BENCH_TOP), most called first or, with BENCH_TOP_BY=time, longest first. */
const TOP = Number(process.env.BENCH_TOP ?? 12);
const TOP_BY: 'calls' | 'ms' = process.env.BENCH_TOP_BY === 'time' ? 'ms' : 'calls';

interface Snapshot {
  /** Calls, and PostgreSQL's time planning and executing them (ms). */
  statements: Map<string, { query: string; calls: number; rows: number; ms: number }>;
  commits: number;
  walSyncs: number;
  walWrites: number;
  blob: { file: number; folder: number };
}

/** The `postline_blob_syncs_total` values of a Prometheus text. */
export function blobSyncsOf(metrics: string): { file: number; folder: number } {
  const read = (kind: string) =>
    Number(new RegExp(`^postline_blob_syncs_total\\{kind="${kind}"\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? 0);
  return { file: read('file'), folder: read('folder') };
}

export interface RoundTrips {
  /** The service's DATABASE_URL: the database `postline` on the private server (a unix socket). */
  readonly url: string;
  /** Starts counting; `blobMetrics` reads the service's Prometheus text. */
  begin(blobMetrics: () => Promise<string>): Promise<{ end(messages: number): Promise<string[]> }>;
  stop(): Promise<void>;
}

const oneLine = (q: string, width = 110) => {
  const s = q.replace(/\s+/g, ' ').trim();
  return s.length > width ? `${s.slice(0, width - 1)}…` : s;
};

/** A private PostgreSQL with `pg_stat_statements`, for a counting run. */
export async function startRoundTrips(): Promise<RoundTrips> {
  const dir = mkdtempSync(join(tmpdir(), 'postline-count-'));
  chmodSync(dir, 0o755); // started as root, the server runs as another user, which must reach its cluster
  const server = await startEmbeddedPostgres(dir, {
    shared_preload_libraries: 'pg_stat_statements',
    'pg_stat_statements.track_utility': 'on',
    'pg_stat_statements.max': '10000',
  });
  const admin = new pg.Client({ connectionString: server.url.replace('/postline?', '/postgres?') });
  await admin.connect();
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');

  const snapshot = async (blobMetrics: () => Promise<string>): Promise<Snapshot> => {
    await sleep(STATS_REPORT_MS);
    const statements = await admin.query<{
      id: string;
      query: string;
      calls: string;
      rows: string;
      ms: number;
    }>(
      `SELECT queryid::text AS id, query, calls, rows, total_exec_time + total_plan_time AS ms FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'postline')`,
    );
    const { rows } = await admin.query<{ commits: string; syncs: string; writes: string }>(
      `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = 'postline') AS commits,
              (SELECT coalesce(sum(fsyncs), 0) FROM pg_stat_io WHERE object = 'wal') AS syncs,
              (SELECT coalesce(sum(writes), 0) FROM pg_stat_io WHERE object = 'wal') AS writes`,
    );
    return {
      statements: new Map(
        statements.rows.map((r) => [
          r.id,
          { query: r.query, calls: Number(r.calls), rows: Number(r.rows), ms: Number(r.ms) },
        ]),
      ),
      commits: Number(rows[0].commits),
      walSyncs: Number(rows[0].syncs),
      walWrites: Number(rows[0].writes),
      blob: blobSyncsOf(await blobMetrics()),
    };
  };

  return {
    url: server.url,
    async begin(blobMetrics) {
      const before = await snapshot(blobMetrics);
      return {
        async end(messages) {
          const after = await snapshot(blobMetrics);
          const per = (n: number) => (n / messages).toFixed(2);
          const calls = [...after.statements].map(([id, s]) => ({
            query: s.query,
            calls: s.calls - (before.statements.get(id)?.calls ?? 0),
            rows: s.rows - (before.statements.get(id)?.rows ?? 0),
            ms: s.ms - (before.statements.get(id)?.ms ?? 0),
          }));
          const total = calls.reduce((sum, s) => sum + s.calls, 0);
          const blobFile = after.blob.file - before.blob.file;
          const blobFolder = after.blob.folder - before.blob.folder;
          const top = calls
            .filter((s) => s.calls > 0)
            .sort((a, b) => b[TOP_BY] - a[TOP_BY])
            .slice(0, TOP);
          return [
            `round trips (${messages} messages counted on PostgreSQL 18 with pg_stat_statements): ` +
              `statements ${per(total)}/msg, commits ${per(after.commits - before.commits)}/msg, ` +
              `WAL syncs ${per(after.walSyncs - before.walSyncs)}/msg (writes ${per(after.walWrites - before.walWrites)}), ` +
              `blob syncs ${per(blobFile + blobFolder)}/msg (file ${per(blobFile)}, folder ${per(blobFolder)})`,
            ...top.map(
              (s) =>
                `    ${(s.calls / messages).toFixed(3)}/msg ${per(s.rows).padStart(5)} rows ${((s.ms * 1000) / messages).toFixed(0).padStart(4)} µs  ${oneLine(s.query)}`,
            ),
          ];
        },
      };
    },
    async stop() {
      await admin.end().catch(() => {});
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A counting run against Postline as `npm start` runs it (a process of its own): `env` with the counter's
 * database, a data dir of its own and free ports for the variables `ports` names. `prepare` sets the service up
 * (organization, warm-up) and returns the counted work, which resolves with the messages it sent; the count ends
 * once the process has gone quiet (projections and processes done with them).
 */
export async function countOnServer(
  env: Record<string, string>,
  ports: string[],
  prepare: (env: Record<string, string>) => Promise<() => Promise<number>>,
): Promise<string[]> {
  const counter = await startRoundTrips();
  const dataDir = mkdtempSync(join(tmpdir(), 'postline-count-data-'));
  const own: Record<string, string> = { ...env, DATABASE_URL: counter.url, POSTLINE_DATA_DIR: dataDir };
  for (const name of ports) own[name] = String(await freePort());
  const server = await startServer(own);
  try {
    const work = await prepare(own);
    const pid = server.child.pid!;
    await quiet(pid, processCpu);
    const counting = await counter.begin(async () =>
      (await fetch(`http://127.0.0.1:${own.PORT}/metrics`)).text(),
    );
    const messages = await work();
    await quiet(pid, processCpu);
    return await counting.end(messages);
  } finally {
    await server.stop();
    await counter.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
