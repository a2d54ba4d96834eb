import { Batcher, GROUP_COMMIT } from './batcher.ts';
import type { Database, Queryable } from './db/database.ts';
import type { Migration } from './db/migrations.ts';
import type { BlobRow } from './eventstore/types.ts';

export const blobRowMigrations: Migration[] = [
  {
    id: 'blob-rows-001',
    sql: `CREATE TABLE blob_rows (
  key text PRIMARY KEY,
  bytes bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
)`,
  },
  {
    // Blobs, rows or files, that no event is known to name yet (BlobStore.sweepUnnamed).
    id: 'blob-rows-002',
    sql: 'CREATE TABLE blob_unnamed (key text PRIMARY KEY)',
  },
];

/**
 * The common table expressions that write blob rows, for a statement's WITH, from the parameters `blobRowParams`
 * gives, numbered from `$first`: each key listed as unnamed in the same commit as its row (a key without bytes is
 * a file's, only listed). A row written again (a command tried again after a conflict) is the same blob. The
 * bytes travel as one binary parameter, cut by offset and length: an array of byteas would go as hex text, twice
 * their size, to be encoded by Node and decoded by PostgreSQL.
 */
export const blobRowsWritten = (first: number) => {
  const [k, b, o, n] = [0, 1, 2, 3].map((i) => `$${first + i}`);
  return `blob_row AS (
  INSERT INTO blob_rows (key, bytes)
  SELECT k, substring(${b}::bytea FROM o + 1 FOR n) FROM unnest(${k}::text[], ${o}::int[], ${n}::int[]) AS t(k, o, n)
  WHERE n IS NOT NULL ON CONFLICT (key) DO NOTHING
), blob_listed AS (INSERT INTO blob_unnamed (key) SELECT unnest(${k}::text[]) ON CONFLICT (key) DO NOTHING)`;
};

/** The four parameters of `blobRowsWritten` for `rows` (null bytes: a file's key, only listed). */
export function blobRowParams(rows: { key: string; bytes: Buffer | null }[]): unknown[] {
  const offsets: (number | null)[] = [];
  let at = 0;
  for (const { bytes } of rows) {
    offsets.push(bytes ? at : null);
    at += bytes?.length ?? 0;
  }
  return [
    rows.map((r) => r.key),
    Buffer.concat(rows.flatMap((r) => (r.bytes ? [r.bytes] : []))),
    offsets,
    rows.map((r) => r.bytes?.length ?? null),
  ];
}

/** The bytes of one INSERT at most: a put larger than this goes alone. */
const BATCH_BYTES = 4 * 1024 * 1024;
/** Rows just committed are kept in memory up to this many bytes and this long: what delivery reads right after. */
const RECENT_BYTES = 8 * 1024 * 1024;
const RECENT_MS = 60_000;

/**
 * The small blobs of the blob store (blob-store.ts), as rows of the database: puts in flight share one INSERT and
 * one commit (group commit, GROUP_COMMIT), where each file of its own waits for its own sync and its
 * folder's. PostgreSQL shares one flush of its WAL among the commits of the moment, so a message's bytes and its
 * event become durable in two shared flushes.
 */
export class BlobRows {
  readonly #db: Database;
  /** A row to write (`bytes`), or only the key of a file about to be written (`bytes` null). */
  readonly #writes: Batcher<{ key: string; bytes: Buffer | null }, undefined>;
  /**
   * Rows this process committed last, by key, oldest first: a blob never changes, so its bytes from memory are its
   * row's. The relay's raw message is read back by the delivery moments after it was written. Kept briefly, so
   * that a row another process deletes (retention) is not served from here for long.
   */
  readonly #recent = new Map<string, { bytes: Buffer; at: number }>();
  #recentBytes = 0;
  readonly #now: () => number;

  /** `now`: the time in ms the bytes kept in memory age by. */
  constructor(db: Database, { now = Date.now }: { now?: () => number } = {}) {
    this.#db = db;
    this.#now = now;
    this.#writes = new Batcher({
      ...GROUP_COMMIT,
      maxWeight: BATCH_BYTES,
      weight: (row) => (row.bytes?.length ?? 0) + 1,
      run: async (rows) => {
        await db.query(`WITH ${blobRowsWritten(1)} SELECT 1`, blobRowParams(rows));
        return rows.map(() => undefined);
      },
    });
  }

  /** Resolves once the row is committed, listed as unnamed. */
  async put(key: string, bytes: Buffer): Promise<undefined> {
    await this.#writes.add({ key, bytes });
    this.remember({ key, bytes });
    return undefined;
  }

  /** Resolves once every row is committed (a store that cannot write them with their events, KurrentDB's). */
  async putAll(rows: BlobRow[]): Promise<void> {
    await Promise.all(rows.map((r) => this.put(r.key, r.bytes)));
  }

  /** A row committed by this process (its own put, or with the events that name it), kept for the reads after. */
  remember({ key, bytes }: BlobRow): void {
    this.#forget(key); // told of twice, counted once
    const now = this.#now();
    this.#recent.set(key, { bytes, at: now });
    this.#recentBytes += bytes.length;
    for (const [oldest, kept] of this.#recent) {
      if (this.#recentBytes <= RECENT_BYTES && kept.at > now - RECENT_MS) break;
      this.#forget(oldest);
    }
  }

  #forget(key: string): void {
    const kept = this.#recent.get(key);
    if (!kept) return;
    this.#recent.delete(key);
    this.#recentBytes -= kept.bytes.length;
  }

  /** The bytes of a row this process committed lately, without a round trip; undefined when not kept. */
  recent(key: string): Buffer | undefined {
    const kept = this.#recent.get(key);
    return kept && kept.at > this.#now() - RECENT_MS ? kept.bytes : undefined;
  }

  /** Lists the key of a file as unnamed; resolves once committed, before the file may exist. */
  listUnnamed(key: string): Promise<undefined> {
    return this.#writes.add({ key, bytes: null });
  }

  /** The keys in `keys` are named by events committed in `tx`: they are no longer unnamed. */
  async named(tx: Queryable, keys: string[]): Promise<void> {
    if (keys.length > 0) await tx.query('DELETE FROM blob_unnamed WHERE key = ANY($1)', [keys]);
  }

  /** Unnamed keys that sort before `before` (older than the time it encodes), oldest first. */
  async unnamed(before: string, limit: number): Promise<string[]> {
    const { rows } = await this.#db.query<{ key: string }>(
      'SELECT key FROM blob_unnamed WHERE key < $1 ORDER BY key LIMIT $2',
      [before, limit],
    );
    return rows.map((r) => r.key);
  }

  async get(key: string): Promise<Buffer | undefined> {
    const { rows } = await this.#db.query<{ bytes: Buffer }>('SELECT bytes FROM blob_rows WHERE key = $1', [
      key,
    ]);
    return rows[0]?.bytes;
  }

  /** Removes the row; its bytes leave the table's files once autovacuum has reclaimed the dead row. */
  async delete(key: string): Promise<void> {
    this.#forget(key);
    await this.#db.query(
      'WITH u AS (DELETE FROM blob_unnamed WHERE key = $1) DELETE FROM blob_rows WHERE key = $1',
      [key],
    );
  }
}
