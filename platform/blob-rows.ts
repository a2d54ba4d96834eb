import { Batcher } from './batcher.ts';
import type { Database } from './db/database.ts';
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
  readonly #writes: Batcher<{ key: string; bytes: Buffer }, undefined>;

  constructor(db: Database) {
    this.#db = db;
    this.#writes = new Batcher({
      maxInFlight: 2,
      maxWeight: BATCH_BYTES,
      weight: (row) => row.bytes.length + 1,
      run: async (rows) => {
        await db.query('INSERT INTO blob_rows (key, bytes) SELECT * FROM unnest($1::text[], $2::bytea[])', [
          rows.map((r) => r.key),
          rows.map((r) => r.bytes),
        ]);
        return rows.map(() => undefined);
      },
    });
  }

  /** Resolves once the row is committed. */
  put(key: string, bytes: Buffer): Promise<undefined> {
    return this.#writes.add({ key, bytes });
  }

  async get(key: string): Promise<Buffer | undefined> {
    const { rows } = await this.#db.query<{ bytes: Buffer }>('SELECT bytes FROM blob_rows WHERE key = $1', [
      key,
    ]);
    return rows[0]?.bytes;
  }

  /** Removes the row; its bytes leave the table's files once autovacuum has reclaimed the dead row. */
  async delete(key: string): Promise<void> {
    await this.#db.query('DELETE FROM blob_rows WHERE key = $1', [key]);
  }
}
