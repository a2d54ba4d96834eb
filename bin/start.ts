/**
 * What runs a Postline in this process: the service (`postline serve`), or one operator's command on a Postline of
 * its own. bin/main.ts loads it for those only.
 */
import { constants } from 'node:os';
import type { Config } from '../platform/config.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../platform/db/embedded-postgres.ts';
import { createLogger } from '../platform/logger.ts';
import { runCommand } from './cli/commands.ts';
import { claimDataDir, type Owner, releaseDataDir } from './cli/data-dir-owner.ts';
import { stopOnSignals, wasInterrupted } from './cli/signals.ts';
import { type Postline, startPostline } from './service.ts';

interface Opened {
  config: Config;
  owner: Owner | null;
  embedded?: EmbeddedPostgres;
}

/**
 * Without DATABASE_URL the process owns the data dir and starts its PostgreSQL server (embedded-postgres.ts);
 * from there on it runs as with any PostgreSQL, its DATABASE_URL pointing at that server.
 */
async function withDatabase(config: Config, server?: { port: number; host: string }): Promise<Opened> {
  if (!config.embedded) return { config, owner: null };
  const owner = claimDataDir(config.POSTLINE_DATA_DIR, server);
  try {
    const embedded = await startEmbeddedPostgres(config.POSTLINE_DATA_DIR);
    return { config: { ...config, DATABASE_URL: embedded.url }, owner, embedded };
  } catch (error) {
    releaseDataDir(config.POSTLINE_DATA_DIR);
    throw error;
  }
}

/** The data dir and its server, given up: the server stopped (fast shutdown), then the data dir released. */
async function closeDatabase(opened: Opened | undefined): Promise<void> {
  await opened?.embedded?.stop();
  if (opened?.owner) releaseDataDir(opened.config.POSTLINE_DATA_DIR);
}

/** `postline serve`: the service, until a signal stops it. */
export async function serve(given: Config) {
  const log = createLogger(given.LOG_LEVEL, undefined, given.LOG_FORMAT);
  let opened: Opened | undefined;
  let postline: Postline | undefined;
  let starting: Promise<unknown> = withDatabase(given, { port: given.PORT, host: given.HOST }).then(
    (o) => (opened = o),
  );
  // A signal at any point stops what started, once its start ended; a service that stops in order exits 0.
  stopOnSignals(
    async () => {
      await starting.catch(() => {});
      await postline?.close();
      await closeDatabase(opened);
    },
    () => 0,
  );
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception; stopping');
    opened?.embedded?.stopNow();
    process.exit(1);
  });
  await starting;
  if (wasInterrupted() || !opened) return;
  const { config, owner, embedded } = opened;
  const roles = config.POSTLINE_ROLES;
  // Loaded by `serve` alone: an operator's command run here needs neither it nor express.
  const { mountAdmin } = await import('./cli/admin.ts');
  const started = startPostline(config, {
    log,
    // Every process serves HTTP on PORT: the API with the `api` role, else only health checks and metrics.
    http: true,
    api: roles.has('api'),
    smtp: roles.has('smtp'),
    projections: roles.has('projections'),
    processes: roles.has('workers'),
    mount: owner?.adminToken ? (app) => mountAdmin(app, owner.adminToken!, () => started) : undefined,
  });
  starting = started.then((p) => (postline = p));
  try {
    await starting;
  } catch (error) {
    // A start that fails leaves no server of its own behind.
    await closeDatabase(opened);
    throw error;
  }
  if (wasInterrupted() || !postline) return;
  const { rows } = await postline.services.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM organizations',
  );
  log.info(
    {
      roles: [...roles],
      port: postline.port,
      database: embedded ? `embedded PostgreSQL in ${config.POSTLINE_DATA_DIR}` : 'PostgreSQL',
    },
    roles.has('api')
      ? `Postline serving ${config.PUBLIC_URL}/v1 (API reference: ${config.PUBLIC_URL}/docs)`
      : `Postline running ${[...roles].join(', ')}`,
  );
  if (rows[0].n === 0) {
    process.stdout.write(
      `\nNo organization yet. Create one and get your first API keys with:\n\n  npx postline orgs create --name "My Company"\n\n`,
    );
  }
}

/** One operator's command, run in this process on a Postline of its own (and its embedded server, if any). */
export async function runHere(argv: string[], given: Config): Promise<number> {
  let opened: Opened | undefined;
  const opening = withDatabase(given).then((o) => (opened = o));
  // Interrupted, a command stops the server it started and releases the data dir, exit code 128 + the signal's
  // number. The server's fast shutdown ends the command's sessions, rolling back what they were writing: closing
  // the Postline first would wait for that work.
  if (given.embedded)
    stopOnSignals(
      async () => {
        await opening.catch(() => {});
        await closeDatabase(opened);
      },
      (signal) => 128 + constants.signals[signal as keyof typeof constants.signals],
    );
  const { config } = await opening;
  try {
    const postline = await startPostline(
      { ...config, LOG_LEVEL: 'warn' },
      { http: false, processes: false, projectionThread: false },
    );
    try {
      return await runCommand(argv, postline, process.stdout);
    } finally {
      await postline.close();
    }
  } finally {
    await closeDatabase(opened);
  }
}
