import { Batcher } from './batcher.ts';
import type { Database, Queryable } from './db/database.ts';
import type { Migration } from './db/migrations.ts';

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

/** The bytes of one INSERT at most: a put larger than this goes alone. */
const BATCH_BYTES = 4 * 1024 * 1024;

/**
 * The small blobs of the blob store (blob-store.ts), as rows of the database: puts in flight share one INSERT and
 * one commit (group commit), where each file of its own waits for its own sync and its folder's. PostgreSQL
 * shares one flush of its WAL among the commits of the moment, so a message's bytes and its event become durable
 * in two shared flushes.
 */
export class BlobRows {
  readonly #db: Database;
  /** A row to write (`bytes`), or only the key of a file about to be written (`bytes` null). */
  readonly #writes: Batcher<{ key: string; bytes: Buffer | null }, undefined>;

  constructor(db: Database) {
    this.#db = db;
    this.#writes = new Batcher({
      maxInFlight: 2,
      maxWeight: BATCH_BYTES,
      weight: (row) => (row.bytes?.length ?? 0) + 1,
      run: async (rows) => {
        // Every key is also listed as unnamed, in the same statement and commit as its row.
        await db.query(
          `WITH r AS (INSERT INTO blob_rows (key, bytes)
             SELECT k, b FROM unnest($1::text[], $2::bytea[]) AS t(k, b) WHERE b IS NOT NULL)
           INSERT INTO blob_unnamed (key) SELECT unnest($1::text[])`,
          [rows.map((r) => r.key), rows.map((r) => r.bytes)],
        );
        return rows.map(() => undefined);
      },
    });
  }

  /** Resolves once the row is committed, listed as unnamed. */
  put(key: string, bytes: Buffer): Promise<undefined> {
    return this.#writes.add({ key, bytes });
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
    await this.#db.query(
      'WITH u AS (DELETE FROM blob_unnamed WHERE key = $1) DELETE FROM blob_rows WHERE key = $1',
      [key],
    );
  }
}
