import { describe, it } from 'vitest';
import { KurrentEventStore } from '../../platform/eventstore/kurrentdb.ts';
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
  eventStoreContract('KurrentDB', async () => ({
    open: (options) => KurrentEventStore.connect(url, options),
    dispose: async () => {},
  }));
} else {
  console.log(SKIP_REASON);
  describe.skipIf(!url)(SKIP_REASON, () => {
    it('runs the event store contract on KurrentDB', () => {});
  });
}
