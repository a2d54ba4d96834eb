/**
 * The projection runner's thread (bin/projections-thread.ts): its own pool and event store on the same database,
 * the runner, and messages both ways. Checkpoints and changes go to the main thread in the order the runner
 * reports them ('changed' before its 'checkpoint', so caches clear before the waiting request is answered).
 * Nothing here may end the thread when the database goes away: the pool and the LISTEN connection survive lost
 * connections (platform/db/database.ts), the runner's subscription retries with back-off, and so do calls.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { connectPostgres } from '../platform/db/database.ts';
import { isDatabaseUnavailable } from '../platform/db/unavailable.ts';
import { PostgresEventStore } from '../platform/eventstore/postgres/store.ts';
import type { Position } from '../platform/eventstore/types.ts';
import { createLogger, type LogFormat } from '../platform/logger.ts';
import { projections } from '../projections/all.ts';
import { ProjectionRunner } from '../projections/runner.ts';
import type { ToRunner } from './projections-thread.ts';

const { databaseUrl, pollMs, wakeAfterMs, poolSize, logLevel, logFormat } = workerData as {
  databaseUrl: string;
  pollMs: number;
  wakeAfterMs: number;
  poolSize: number;
  logLevel: string;
  logFormat: LogFormat;
};
const port = parentPort!;
// Projections apply a batch side by side, each on a connection of its own besides the log's reader, as far as
// DATABASE_POOL_SIZE allows (past it they take turns).
const db = connectPostgres(databaseUrl, Math.min(projections.length + 2, poolSize));
// The main thread created the log's schema before starting this thread.
const store = new PostgresEventStore(db, { pollMs, wakeAfterMs });
const log = createLogger(logLevel, undefined, logFormat);
const runner = new ProjectionRunner(db, store, projections, log);
runner.events.on('changed', (name: string) => port.postMessage({ type: 'changed', name }));
runner.events.on('checkpoint', (name: string, position: Position) =>
  port.postMessage({ type: 'checkpoint', name, position }),
);

let stopping = false;

/**
 * Resolves once the runner has caught up. A database that is away is waited for (backing off), as the runner
 * itself does: an error here would end the thread.
 */
async function caughtUp(): Promise<void> {
  for (let failures = 0; !stopping; failures++) {
    try {
      return await runner.caughtUp();
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** failures)));
    }
  }
}

port.on('message', async (m: ToRunner) => {
  if (m.type === 'wake') return store.appended(m.position);
  try {
    if (m.type === 'caughtUp') await caughtUp();
    else {
      stopping = true;
      await runner.stop();
      await store.close();
      await db.close();
    }
  } catch (err) {
    log.error({ err }, `projection runner: ${m.type} failed`);
  } finally {
    port.postMessage({ type: 'done', id: m.id });
  }
});

runner.start();
port.postMessage({ type: 'ready' });
