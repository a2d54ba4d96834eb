import { describe, it } from 'vitest';
import { BlobRows, blobRowMigrations } from '../../platform/blob-rows.ts';
import { migrate } from '../../platform/db/migrations.ts';
import { KurrentEventStore } from '../../platform/eventstore/kurrentdb.ts';
import { openTestDatabase } from '../support/databases.ts';
import { eventStoreContract } from './event-store.contract.ts';

/**
 * The event store contract on KurrentDB (or EventStoreDB). It needs a server: set KURRENTDB_URL, e.g.
 * `docker-compose up -d kurrentdb` and `KURRENTDB_URL='kurrentdb://127.0.0.1:2113?tls=false' npx vitest run test/contract/kurrentdb-event-store.test.ts`.
 * A fresh server is best: the contract reads `$all` from the start and expects to find its own events in the first 10,000.
 */
const url = process.env.KURRENTDB_URL;
const SKIP_REASON =
  'KURRENTDB_URL not set: KurrentDB contract tests skipped (start one with docker-compose up kurrentdb)';

if (url) {
  // Blob rows go where the service keeps them with KurrentDB: the blob store's table in PostgreSQL.
  eventStoreContract('KurrentDB', async () => {
    const { db, dispose } = await openTestDatabase();
    await migrate(db, blobRowMigrations);
    const rows = new BlobRows(db);
    return {
      open: (options) => KurrentEventStore.connect(url, { ...options, writeBlobs: (b) => rows.putAll(b) }),
      blobs: { get: (key) => rows.get(key), unnamed: () => rows.unnamed('blob_~', 10_000) },
      dispose,
    };
  });
} else {
  console.log(SKIP_REASON);
  describe.skipIf(!url)(SKIP_REASON, () => {
    it('runs the event store contract on KurrentDB', () => {});
  });
}
