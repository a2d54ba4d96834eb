import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { type ChannelHandlers, PgListener } from './listener.ts';
import { PGlitePool } from './pglite-pool.ts';

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

/** The minimum every SQL user needs: a parameterised query. Both pools and transactions have it. */
export interface Queryable {
  query<R = any>(sql: string, params?: unknown[]): Promise<QueryResult<R>>;
}

export interface Transaction extends Queryable {
  /**
   * A statement without parameters to run just before COMMIT, in the same round trip (e.g. moving a checkpoint).
   * Like every statement of the transaction, a failure rolls it all back.
   */
  atCommit(sql: string): void;
}

/** A string as an SQL literal, for statements that go without parameters (`atCommit`, merged round trips). */
export const literal = (value: string): string => pg.escapeLiteral(value);

/** A multi-statement simple query answers with one result per statement: the last one is the caller's. */
const lastOf = (r: any) => (Array.isArray(r) ? r[r.length - 1] : r);

/**
 * One relational database, PostgreSQL or embedded PGlite, behind the same small interface.
 * Kysely serves typed read-model queries; `query`/`transaction` serve the event store and projections.
 */
export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  readonly kysely: Kysely<any>;
  /** Runs `fn` in one transaction. With PGlite there is one connection: never touch `db` inside `fn`, only `tx`. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Runs several statements at once (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * LISTEN on a channel; returns the function that stops listening. Never fails for a database that is away:
   * the connection is made again with back-off. `onResume` is called once LISTEN is in place and again each
   * time it is after being lost (`onLost`): notifications in between were missed. PGlite never loses it.
   */
  listen(
    channel: string,
    onNotify: (payload: string) => void,
    handlers?: Pick<ChannelHandlers, 'onLost' | 'onResume'>,
  ): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

interface PoolLike {
  query(sql: string, params?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
  connect(): Promise<{
    query(sql: string, params?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
    release(): void;
  }>;
  end(): Promise<void>;
}

function wrap(
  kind: Database['kind'],
  pool: PoolLike,
  listen: Database['listen'],
  onClose: () => Promise<void>,
) {
  const kysely = new Kysely<any>({ dialect: new PostgresDialect({ pool: pool as any }) });
  const db: Database = {
    kind,
    kysely,
    async query(sql, params) {
      const r = await pool.query(sql, params);
      return { rows: r.rows, rowCount: r.rowCount ?? 0 };
    },
    async transaction(fn) {
      const client = await pool.connect();
      // Round trips are what a short transaction costs under load: BEGIN goes with the first statement when
      // that one has no parameters (one simple query), and `atCommit` statements go with COMMIT.
      let begun = false;
      const atCommit: string[] = [];
      try {
        const tx: Transaction = {
          async query(sql, params) {
            let text = sql;
            if (!begun) {
              begun = true;
              if (params?.length) await client.query('BEGIN');
              else text = `BEGIN;${sql}`;
            }
            const r = lastOf(await client.query(text, params));
            return { rows: r.rows, rowCount: r.rowCount ?? 0 };
          },
          atCommit(sql) {
            atCommit.push(sql);
          },
        };
        const result = await fn(tx);
        if (begun || atCommit.length > 0)
          await client.query(`${begun ? '' : 'BEGIN;'}${atCommit.map((s) => `${s};`).join('')}COMMIT`);
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async exec(sql) {
      await pool.query(sql);
    },
    listen,
    async close() {
      await kysely.destroy().catch(() => {});
      await onClose();
    },
  };
  return db;
}

// int8 and numeric as strings would leak into JSON; counts and revisions fit in a double.
pg.types.setTypeParser(20, (v) => Number(v));

/** A connection that cannot be made in this long fails (the request answers 503), rather than waiting on. */
const CONNECTION_TIMEOUT_MS = 10_000;

/**
 * PostgreSQL through a pool of `max` connections, and one more that LISTENs. A connection that breaks (a
 * terminated backend, a restarted server) fails only the statements it was running: every client carries an
 * `error` listener, whether idle or checked out, so the error event never ends the process, and the pool drops
 * the client when it is given back. The next statements get new connections.
 */
export function connectPostgres(url: string, max = 20): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
    keepAlive: true,
  });
  pool.on('error', () => {}); // an idle client's loss: the pool drops it, the next statement connects anew
  // A checked-out client has no pool listener: its loss fails its statement, and is no error event besides.
  pool.on('connect', (client) => client.on('error', () => {}));
  const listener = new PgListener({ connectionString: url, connectionTimeoutMillis: CONNECTION_TIMEOUT_MS });
  const listen: Database['listen'] = (channel, onNotify, handlers) =>
    listener.add(channel, { onNotify, ...handlers });
  return wrap('postgres', pool, listen, async () => {
    await listener.close();
    await pool.end().catch(() => {});
  });
}

/**
 * PGlite's own start parameters, plus a buffer cache of 32 MB instead of its default 128 MB: the cache lives in
 * the process's WebAssembly memory, and the operating system's file cache sits under it anyway (PGlite reads and
 * writes real files), so the default's extra 100 MB of resident memory bought little.
 */
const PGLITE_START_PARAMS = [...PGlite.defaultStartParams, '-c', 'shared_buffers=32MB'];

/** Embedded PostgreSQL. `dataDir` undefined keeps everything in memory (tests). */
export async function openPGlite(dataDir?: string): Promise<Database> {
  let pglite: PGlite;
  if (dataDir) {
    const pgData = join(dataDir, 'pglite');
    mkdirSync(dataDir, { recursive: true });
    // A new data dir is initialised by an instance of its own, closed at once: given start parameters, PGlite
    // hands them to its initdb instance too, which then stays in memory (about 250 MB more after the first start).
    if (!existsSync(join(pgData, 'PG_VERSION'))) await (await PGlite.create(pgData)).close();
    pglite = await PGlite.create(pgData, { startParams: PGLITE_START_PARAMS });
  } else pglite = await PGlite.create();
  const pool = new PGlitePool(pglite);
  const listen: Database['listen'] = async (channel, onNotify) => {
    const unlisten = await pool.withLock(() => pglite.listen(channel, onNotify));
    return () => pool.withLock(() => unlisten());
  };
  return wrap('pglite', pool, listen, async () => {
    await pool.end();
  });
}

export async function openDatabase(config: {
  DATABASE_URL?: string;
  DATABASE_POOL_SIZE: number;
  POSTLINE_DATA_DIR: string;
}) {
  return config.DATABASE_URL
    ? connectPostgres(config.DATABASE_URL, config.DATABASE_POOL_SIZE)
    : openPGlite(config.POSTLINE_DATA_DIR);
}
