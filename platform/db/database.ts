import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { type ChannelHandlers, PgListener } from './listener.ts';

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

/**
 * A string as an SQL literal, for statements that go without parameters (`atCommit`, merged round trips): quotes
 * and backslashes doubled, an escape string when it holds a backslash (as `pg.escapeLiteral`, in one native pass:
 * a projection's batch of emails is a literal of megabytes).
 */
export const literal = (value: string): string => {
  const doubled = value.replace(/['\\]/g, '$&$&');
  return value.includes('\\') ? ` E'${doubled}'` : `'${doubled}'`;
};

/**
 * `sql` with its parameter `$1` given as a literal. Spliced, not `String.replace`d: a replacement string reads
 * `$&`, `$'` and `` $` `` in the value as patterns, which an email's subject may well hold.
 */
export function withLiteral(sql: string, value: string): string {
  const at = sql.indexOf('$1');
  if (at < 0 || sql.includes('$2')) throw new Error('withLiteral: the statement must have one parameter, $1');
  return sql.slice(0, at) + literal(value) + sql.slice(at + 2);
}

/** Names of the statements marked `prepared`, by their text. */
const preparedNames = new Map<string, string>();

/**
 * Marks a statement of fixed text, run many times a message (appends, reads of the log and of a stream), to be
 * prepared once per connection: PostgreSQL then parses it once and plans it from its cache, where each run of an
 * unnamed statement is parsed and planned again. Only single statements with parameters, whose result columns
 * are named (a cached plan refuses to change its result's type).
 */
export function prepared(sql: string): string {
  if (!preparedNames.has(sql)) preparedNames.set(sql, `postline_${preparedNames.size}`);
  return sql;
}

/** What pg runs: a named statement for a text marked `prepared`. */
const statement = (sql: string, params?: unknown[]) => {
  const name = params?.length ? preparedNames.get(sql) : undefined;
  return name ? { name, text: sql, values: params } : { text: sql, values: params };
};

/** A multi-statement simple query answers with one result per statement: the last one is the caller's. */
const lastOf = (r: any) => (Array.isArray(r) ? r[r.length - 1] : r);

/**
 * The PostgreSQL database behind a small interface (the embedded one of `npm start` too: embedded-postgres.ts).
 * Kysely serves typed read-model queries; `query`/`transaction` serve the event store and projections.
 */
export interface Database extends Queryable {
  readonly kysely: Kysely<any>;
  /** Runs `fn` in one transaction, on a connection of its own: statements of `fn` go through `tx`. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Runs several statements at once (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * LISTEN on a channel; returns the function that stops listening. Never fails for a database that is away:
   * the connection is made again with back-off. `onResume` is called once LISTEN is in place and again each
   * time it is after being lost (`onLost`): notifications in between were missed.
   */
  listen(
    channel: string,
    onNotify: (payload: string) => void,
    handlers?: Pick<ChannelHandlers, 'onLost' | 'onResume'>,
  ): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/**
 * Whether a connection whose statement failed goes back to the pool: after an ERROR the server goes on with the
 * session (a unique violation is how the event store learns of a conflict), after FATAL or a broken connection it
 * does not. `pool.query` would drop the connection after any error, and a new one costs a server process.
 */
const sessionGoesOn = (error: unknown) => error instanceof pg.DatabaseError && error.severity === 'ERROR';

/** One statement on a connection of the pool, which keeps the connection unless it broke. */
async function pooledQuery(pool: pg.Pool, query: ReturnType<typeof statement> | string) {
  const client = await pool.connect();
  let result: pg.QueryResult;
  try {
    result = await client.query(query);
  } catch (error) {
    client.release(sessionGoesOn(error) ? undefined : (error as Error));
    throw error;
  }
  client.release();
  return result;
}

function wrap(pool: pg.Pool, listen: Database['listen'], onClose: () => Promise<void>) {
  const kysely = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
  const db: Database = {
    kysely,
    async query(sql, params) {
      const r = await pooledQuery(pool, statement(sql, params));
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
            const r = lastOf(await client.query(statement(text, params)));
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
      await pooledQuery(pool, sql);
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
    // No JIT compilation: every statement here is short, and a plan whose cost the planner overestimates (a table
    // never analyzed is taken for 10 pages of rows) was compiled anew on every run, costing 100 times its work.
    options: '-c jit=off',
  });
  pool.on('error', () => {}); // an idle client's loss: the pool drops it, the next statement connects anew
  // A checked-out client has no pool listener: its loss fails its statement, and is no error event besides.
  pool.on('connect', (client) => client.on('error', () => {}));
  const listener = new PgListener({ connectionString: url, connectionTimeoutMillis: CONNECTION_TIMEOUT_MS });
  const listen: Database['listen'] = (channel, onNotify, handlers) =>
    listener.add(channel, { onNotify, ...handlers });
  return wrap(pool, listen, async () => {
    await listener.close();
    await pool.end().catch(() => {});
  });
}
