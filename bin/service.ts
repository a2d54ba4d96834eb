import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type express from 'express';
import { type Clock, systemClock } from '../platform/clock.ts';
import type { Config } from '../platform/config.ts';
import { SecretBox, sha256Hex } from '../platform/crypto.ts';
import { type Database, openDatabase } from '../platform/db/database.ts';
import { migrate } from '../platform/db/migrations.ts';
import { PostgresEventStore } from '../platform/eventstore/postgres.ts';
import type { EventStore } from '../platform/eventstore/types.ts';
import { createHttpApp } from '../platform/http/app.ts';
import { RATE_LIMIT_SCHEMA } from '../platform/http/rate-limit.ts';
import { ApiRouter } from '../platform/http/router.ts';
import { createLogger, type Logger } from '../platform/logger.ts';
import { resolveSecretKey } from '../platform/secret-key.ts';
import type { Services } from '../platform/services.ts';
import type { BackgroundProcess } from '../processes/process.ts';
import { CHECKPOINTS_SCHEMA } from '../projections/projection.ts';
import { ReadModelCache } from '../projections/read-model-cache.ts';
import { ProjectionRunner } from '../projections/runner.ts';
import { ProjectionWaiter } from '../projections/waiter.ts';
import { authenticateKey } from '../read-side/api-keys/queries.ts';
import {
  backgroundProcesses,
  createRateLimiter,
  migrations,
  mountHandlers,
  projections,
  registerRoutes,
} from './composition.ts';
import { ThreadedProjectionRunner } from './projections-thread.ts';

export interface StartOptions {
  clock?: Clock;
  log?: Logger;
  /** Run projections in this process (default true). */
  projections?: boolean;
  /** Run process managers in this process (default true). Tests drive them by hand when false. */
  processes?: boolean;
  /** Serve HTTP (default true). The CLI opens the stores without it. */
  http?: boolean;
  /** Extra non-/v1 handlers (the embedded admin endpoint). */
  mount?: (app: express.Express, services: Services) => void;
  /** An already open database (tests that share one). */
  db?: Database;
}

export interface Postline {
  services: Services;
  runner: ProjectionRunner | ThreadedProjectionRunner;
  processes: BackgroundProcess[];
  app?: express.Express;
  server?: Server;
  port?: number;
  close(): Promise<void>;
}

async function openEventStore(config: Config, db: Database): Promise<EventStore> {
  if (config.KURRENTDB_URL) {
    const { KurrentEventStore } = await import('../platform/eventstore/kurrentdb.ts');
    return KurrentEventStore.connect(config.KURRENTDB_URL);
  }
  return PostgresEventStore.create(db, { pollMs: config.LOG_POLL_MS });
}

/** Opens the stores, migrates, and starts what `options` asks for: the whole service, or only its stores. */
export async function startPostline(config: Config, options: StartOptions = {}): Promise<Postline> {
  const log = options.log ?? createLogger(config.LOG_LEVEL);
  const db = options.db ?? (await openDatabase(config));
  const store = await openEventStore(config, db);
  await db.exec(`${CHECKPOINTS_SCHEMA};${RATE_LIMIT_SCHEMA};`);
  await migrate(db, migrations);

  // On PostgreSQL the runner gets a thread of its own (bin/projections-thread.ts); PGlite has one session, here.
  const runner =
    db.kind === 'postgres' && config.DATABASE_URL && store instanceof PostgresEventStore
      ? new ThreadedProjectionRunner(projections, {
          databaseUrl: config.DATABASE_URL,
          pollMs: config.LOG_POLL_MS,
          log,
        })
      : new ProjectionRunner(db, store, projections, log);
  const waiter = new ProjectionWaiter(
    db,
    options.projections === false ? undefined : runner,
    config.PROJECTION_WAIT_MS,
  );
  const services: Services = {
    config,
    db,
    store,
    clock: options.clock ?? systemClock,
    log,
    secrets: new SecretBox(resolveSecretKey(config)),
    readYourWrites: waiter,
    caches: {
      // An unknown key is not kept: it may be one created a moment ago in another process.
      apiKeys: new ReadModelCache(waiter, 'api_keys', { keepNull: false }),
      domains: new ReadModelCache(waiter, 'domains'),
      // Whole lists of at most SMALL_SUPPRESSION_LIST addresses each: 1,000 of them stay under about 60 MB.
      suppressions: new ReadModelCache(waiter, 'suppressions', { maxEntries: 1000 }),
    },
    rateLimiter: createRateLimiter(config, db),
  };
  if (options.projections !== false) await runner.start();
  const processes = options.processes === false ? [] : backgroundProcesses(services);
  for (const p of processes) p.start();

  let app: express.Express | undefined;
  let server: Server | undefined;
  if (options.http !== false) {
    const router = new ApiRouter();
    registerRoutes(router, services);
    app = createHttpApp({
      services,
      router,
      authenticate: (key) => services.caches.apiKeys.get(sha256Hex(key), () => authenticateKey(db, key)),
      ready: async () => {
        await db.query('SELECT 1');
        await store.headPosition();
        return runner.running || options.projections === false;
      },
      mount: (a) => {
        mountHandlers(a, services);
        options.mount?.(a, services);
      },
    });
    server = app.listen(config.PORT, '0.0.0.0');
    await once(server, 'listening');
  }

  return {
    services,
    runner,
    processes,
    app,
    server,
    port: server ? (server.address() as AddressInfo).port : undefined,
    async close() {
      if (server) {
        server.closeAllConnections();
        await new Promise((r) => server!.close(r));
      }
      await Promise.all(processes.map((p) => p.stop()));
      await runner.stop();
      await waiter.close();
      await services.rateLimiter.close();
      await store.close();
      if (!options.db) await db.close();
    },
  };
}
