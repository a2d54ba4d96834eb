import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type express from 'express';
import { UnsubscribeTokens } from '../domain/broadcasts/unsubscribe-token.ts';
import { egressPolicyOf } from '../domain/delivery/egress-file.ts';
import { outboundAddresses } from '../domain/delivery/egress-sources.ts';
import { shapingPolicyOf } from '../domain/delivery/shaping-file.ts';
import { operatorRulesOf } from '../domain/emails/bounce-classes.ts';
import { TrackingTokens } from '../domain/emails/tracking.ts';
import type { Authenticate } from '../platform/auth/auth-context.ts';
import { BlobRows } from '../platform/blob-rows.ts';
import { BlobStore } from '../platform/blob-store.ts';
import { type Clock, systemClock } from '../platform/clock.ts';
import { type Config, ConfigError } from '../platform/config.ts';
import { SecretBox } from '../platform/crypto.ts';
import { connectPostgres, type Database } from '../platform/db/database.ts';
import { migrate } from '../platform/db/migrations.ts';
import { createResolver } from '../platform/dns.ts';
import { stuckConsumers } from '../platform/eventstore/parked-events.ts';
import { WAKE_AFTER_MS } from '../platform/eventstore/postgres/notifier.ts';
import { PostgresEventStore } from '../platform/eventstore/postgres/store.ts';
import type { EventStore } from '../platform/eventstore/types.ts';
import type { HttpDrain } from '../platform/http/drain.ts';
import { openRateLimiter } from '../platform/http/rate-limit.ts';
import { listenHttp } from '../platform/http/server.ts';
import { IdempotencyKeys } from '../platform/idempotency/idempotency.ts';
import { createLogger, type Logger } from '../platform/logger.ts';
import { resolveSecretKey } from '../platform/secret-key.ts';
import type { Services } from '../platform/services.ts';
import type { BackgroundProcess } from '../processes/process.ts';
import { projections } from '../projections/all.ts';
import { ProjectionRunner } from '../projections/runner.ts';
import { ProjectionWaiter } from '../projections/waiter.ts';
import type { SmtpListeners } from '../smtp/listeners.ts';
import { readModelCaches } from './caches.ts';
import { lookUps } from './look-ups.ts';
import { migrations } from './migrations.ts';
import { ThreadedProjectionRunner } from './projections-thread.ts';

export interface StartOptions {
  clock?: Clock;
  log?: Logger;
  /** Run projections in this process (default true). */
  projections?: boolean;
  /**
   * With the log in PostgreSQL, apply them on a thread of their own (default true); false: on this one, as an
   * operator's command does, for which the thread's start (a third of a second) would be a sixth of its time.
   */
  projectionThread?: boolean;
  /** Run process managers in this process (default true). Tests drive them by hand when false. */
  processes?: boolean;
  /** Serve HTTP (default true). The CLI opens the stores without it. */
  http?: boolean;
  /**
   * Serve the API on it (default true); without, HTTP serves only /healthz, /readyz and /metrics, as a process of
   * other roles needs for probes and scraping.
   */
  api?: boolean;
  /** Run the SMTP listeners (default: as `http`). */
  smtp?: boolean;
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
  smtp?: SmtpListeners;
  port?: number;
  close(): Promise<void>;
}

/** Waits for `work`, but no longer than `ms`: what is still running then is left to its claims' leases. */
async function withinGrace(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

async function openEventStore(config: Config, db: Database, blobRows: BlobRows): Promise<EventStore> {
  if (config.KURRENTDB_URL) {
    const { KurrentEventStore } = await import('../platform/eventstore/kurrentdb.ts');
    return KurrentEventStore.connect(config.KURRENTDB_URL, { writeBlobs: (blobs) => blobRows.putAll(blobs) });
  }
  return PostgresEventStore.create(db, { pollMs: config.LOG_POLL_MS, wakeAfterMs: WAKE_AFTER_MS });
}

/** The operator's bounce rules, checked before anything starts: a faulty file stops start-up. */
function bounceRules(config: Config) {
  try {
    return operatorRulesOf(config);
  } catch (err) {
    throw new ConfigError(`Invalid configuration:\n  BOUNCE_RULES_FILE: ${(err as Error).message}`);
  }
}

/** The shaping policy, checked before anything starts: a faulty SHAPING_FILE stops start-up. */
function shaping(config: Config) {
  try {
    return shapingPolicyOf(config);
  } catch (err) {
    throw new ConfigError(`Invalid configuration:\n  SHAPING_FILE: ${(err as Error).message}`);
  }
}

/** The egress sources and pools, checked before anything starts: a faulty SOURCES_FILE stops start-up. */
function egress(config: Config) {
  try {
    return egressPolicyOf(config);
  } catch (err) {
    throw new ConfigError(`Invalid configuration:\n  SOURCES_FILE: ${(err as Error).message}`);
  }
}

/** Opens the stores, migrates, and starts what `options` asks for: the whole service, or only its stores. */
export async function startPostline(given: Config, options: StartOptions = {}): Promise<Postline> {
  const policies = { bounceRules: bounceRules(given), shaping: shaping(given), egress: egress(given) };
  // The suggested SPF record and the DMARC reports' `postline` flag name every address the installation sends from.
  const config = {
    ...given,
    POSTLINE_OUTBOUND_IPS: outboundAddresses(given.POSTLINE_OUTBOUND_IPS, policies.egress),
  };
  const log = options.log ?? createLogger(config.LOG_LEVEL, undefined, config.LOG_FORMAT);
  if (!options.db && !config.DATABASE_URL)
    throw new ConfigError(
      'Invalid configuration:\n  DATABASE_URL: required (bin/start.ts starts the embedded one)',
    );
  const db = options.db ?? connectPostgres(config.DATABASE_URL!, config.DATABASE_POOL_SIZE);
  const blobRows = new BlobRows(db);
  const store = await openEventStore(config, db, blobRows);
  await migrate(db, migrations);

  // With the log in PostgreSQL the runner gets a thread of its own (bin/projections-thread.ts); with KurrentDB, here.
  const runner =
    config.DATABASE_URL && store instanceof PostgresEventStore && options.projectionThread !== false
      ? new ThreadedProjectionRunner(projections, {
          databaseUrl: config.DATABASE_URL,
          pollMs: config.LOG_POLL_MS,
          wakeAfterMs: WAKE_AFTER_MS,
          poolSize: config.DATABASE_POOL_SIZE,
          log,
          logFormat: config.LOG_FORMAT,
        })
      : new ProjectionRunner(db, store, projections, log);
  const waiter = new ProjectionWaiter(
    db,
    options.projections === false ? undefined : runner,
    config.PROJECTION_WAIT_MS,
    projections,
  );
  const secretKey = resolveSecretKey(config);
  const services: Services = {
    config,
    db,
    store,
    clock: options.clock ?? systemClock,
    log,
    secretKey,
    secrets: new SecretBox(secretKey),
    blobs: new BlobStore(join(config.POSTLINE_DATA_DIR, 'blobs'), secretKey, blobRows),
    tokens: {
      tracking: TrackingTokens.fromConfig(config, secretKey),
      unsubscribe: new UnsubscribeTokens(secretKey),
    },
    policies,
    readYourWrites: waiter,
    idempotency: new IdempotencyKeys(store),
    caches: readModelCaches(waiter, db),
    rateLimiter: await openRateLimiter(config, db, log),
    lookUps,
  };
  if (options.projections !== false) await runner.start();
  // An operator's command neither serves nor runs processes: it loads none of their modules (a second of CPU).
  const processes =
    options.processes === false ? [] : (await import('./composition.ts')).backgroundProcesses(services);
  for (const p of processes) p.start();
  if (processes.length > 0) {
    // A source whose reverse DNS does not name its HELO name is logged, never refused (docs/deliverability.md).
    const { warnReverseDns } = await import('../processes/delivery/egress/reverse-dns.ts');
    void warnReverseDns(policies.egress, createResolver(config.DNS_SERVERS), log).catch(() => {});
  }

  const authenticate: Authenticate = (key) => services.caches.apiKeys.get(key);
  let doorsOpen = false;
  let app: express.Express | undefined;
  let server: Server | undefined;
  let drain: HttpDrain | undefined;
  if (options.http !== false)
    ({ app, drain } = (await import('./web.ts')).createWebApp(services, {
      api: options.api !== false,
      authenticate,
      ready: async () => {
        await db.query('SELECT 1');
        await store.headPosition();
        // A parked event is reported, not a reason to stop serving: every replica shares the log, so one bad event
        // (anyone's) would take them all out of a load balancer, and serving holds none of it back.
        const stuck = await stuckConsumers(db);
        // Ready once every door this process opens is open: the SMTP listeners start after HTTP does.
        const running = doorsOpen && (runner.running || options.projections === false);
        return { ready: running, detail: stuck.length > 0 ? { stuck_consumers: stuck } : undefined };
      },
      mount: options.mount,
    }));
  let smtp: SmtpListeners | undefined;
  /**
   * Graceful: every door stops taking work at once (HTTP answers 503 `shutting_down`, SMTP 421); requests,
   * sessions and process work in flight get SHUTDOWN_GRACE_MS to finish, and claimed work not started is given
   * back for another process. Then the projections and stores close.
   */
  const close = async () => {
    const grace = config.SHUTDOWN_GRACE_MS;
    await Promise.all([
      smtp?.close(),
      server && drain?.drain(server, grace),
      withinGrace(Promise.all(processes.map((p) => p.stop())), grace),
    ]);
    await runner.stop();
    await waiter.close();
    await services.rateLimiter.close();
    await store.close();
    if (!options.db) await db.close();
  };
  try {
    if (app) server = await listenHttp(app, config);
    if (options.smtp ?? (options.http !== false && options.api !== false))
      smtp = await (await import('../smtp/listeners.ts')).startSmtp(services, authenticate);
    doorsOpen = true;
  } catch (error) {
    // A door that cannot open (its port taken) closes what started: its reason is all a failed start says.
    await close();
    throw error;
  }

  return {
    services,
    runner,
    processes,
    app,
    server,
    smtp,
    port: server ? (server.address() as AddressInfo).port : undefined,
    close,
  };
}
