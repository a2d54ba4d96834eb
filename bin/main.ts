/** The `postline` command (bin/postline.js starts it): `serve`, and the operators' commands. */
import { constants } from 'node:os';
import { request } from 'undici';
import { type Config, ConfigError, loadConfig } from '../platform/config.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../platform/db/embedded-postgres.ts';
import { createLogger } from '../platform/logger.ts';
import { type CommandOutcome, END_OF_OUTPUT, mountAdmin } from './cli/admin.ts';
import { UsageError } from './cli/cli.ts';
import { runCommand, USAGE, withAbsolutePaths } from './cli/commands.ts';
import { claimDataDir, currentOwner, type Owner, releaseDataDir } from './cli/data-dir-owner.ts';
import { standaloneApiDocument } from './openapi-document.ts';
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

/** Set once a signal ends the run: its handler exits the process, not main()'s end. */
let interrupted = false;

/**
 * On SIGINT or SIGTERM, runs `stop` once, then exits with `code`. In place before the embedded server starts:
 * that server is no process of the terminal's group (embedded-postgres.ts), so without it a Ctrl-C or a kill
 * would end this process and leave the server running, the data dir claimed.
 */
function stopOnSignals(stop: () => Promise<void>, code: (signal: NodeJS.Signals) => number): void {
  const handle = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    stop()
      .catch((error) => process.stderr.write(`postline: ${error.message}\n`))
      .finally(() => process.exit(code(signal)));
  };
  process.on('SIGINT', handle);
  process.on('SIGTERM', handle);
}

/** The data dir and its server, given up: the server stopped (fast shutdown), then the data dir released. */
async function closeDatabase(opened: Opened | undefined): Promise<void> {
  await opened?.embedded?.stop();
  if (opened?.owner) releaseDataDir(opened.config.POSTLINE_DATA_DIR);
}

async function serve(given: Config) {
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
  if (interrupted || !opened) return;
  const { config, owner, embedded } = opened;
  const roles = config.POSTLINE_ROLES;
  starting = startPostline(config, {
    log,
    // Every process serves HTTP on PORT: the API with the `api` role, else only health checks and metrics.
    http: true,
    api: roles.has('api'),
    smtp: roles.has('smtp'),
    projections: roles.has('projections'),
    processes: roles.has('workers'),
    mount: owner?.adminToken ? (app) => mountAdmin(app, owner.adminToken!, () => postline!) : undefined,
  }).then((started) => (postline = started));
  try {
    await starting;
  } catch (error) {
    // A start that fails leaves no server of its own behind.
    await closeDatabase(opened);
    throw error;
  }
  if (interrupted || !postline) return;
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

/** Where the server listens for this machine's CLI: loopback when it binds every interface, else its address. */
function adminHost(host: string | undefined): string {
  if (!host || host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** Embedded mode with a running server: run the command inside it. */
async function viaServer(owner: Owner, token: string, argv: string[]): Promise<number> {
  const res = await request(`http://${adminHost(owner.host)}:${owner.port}/admin/cli`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-postline-admin-token': token },
    body: JSON.stringify({ argv }),
  });
  if (res.statusCode !== 200) {
    // The server's own words: `{error:{type,message,code}}`.
    const error = ((await res.body.json().catch(() => undefined)) as any)?.error;
    const said = error?.message
      ? `${error.message} (${error.code}, HTTP ${res.statusCode})`
      : `HTTP ${res.statusCode}`;
    process.stderr.write(`The running service refused the command: ${said}\n`);
    return 1;
  }
  // The output is streamed as it comes, up to END_OF_OUTPUT; the outcome after it says the rest (admin.ts).
  const end = END_OF_OUTPUT.charCodeAt(0);
  let outcome: Buffer | undefined;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    if (outcome) outcome = Buffer.concat([outcome, chunk]);
    else if (chunk.includes(end)) {
      process.stdout.write(chunk.subarray(0, chunk.indexOf(end)));
      outcome = chunk.subarray(chunk.indexOf(end) + 1);
    } else process.stdout.write(chunk);
  }
  let parsed: CommandOutcome | undefined;
  try {
    parsed = outcome && JSON.parse(outcome.toString('utf8'));
  } catch {}
  if (!parsed) {
    process.stderr.write('postline: the running service ended the command without its outcome.\n');
    return 1;
  }
  if (parsed.stderr)
    process.stderr.write(parsed.stderr.endsWith('\n') ? parsed.stderr : `${parsed.stderr}\n`);
  return parsed.exit;
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === '--help' || argv[0] === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (argv.length === 0) throw new UsageError(USAGE); // a usage mistake: on standard error, exit code 2
  if (argv[0] === 'openapi') {
    // The OpenAPI document on stdout, without a database: for linters and client generators.
    // Written out before main() exits the process: a pipe would otherwise lose what was not yet flushed.
    const text = `${JSON.stringify(standaloneApiDocument(), null, 2)}\n`;
    await new Promise<void>((done) => process.stdout.write(text, () => done()));
    return 0;
  }
  const given = loadConfig();
  if (argv[0] === 'serve') {
    await serve(given);
    return -1;
  }
  const running = given.embedded ? currentOwner(given.POSTLINE_DATA_DIR) : null;
  if (running?.port && running.adminToken)
    return viaServer(running, running.adminToken, withAbsolutePaths(argv));
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
    const postline = await startPostline({ ...config, LOG_LEVEL: 'warn' }, { http: false, processes: false });
    try {
      return await runCommand(argv, postline, process.stdout);
    } finally {
      await postline.close();
    }
  } finally {
    await closeDatabase(opened);
  }
}

// After a signal its handler ends the process, once what was open is closed.
main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0 && !interrupted) process.exit(code);
  },
  (error) => {
    if (interrupted) return;
    if (error instanceof ConfigError || error instanceof UsageError) {
      process.stderr.write(error.message.endsWith('\n') ? error.message : `${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`postline: ${error.message}\n`);
    process.exit(1);
  },
);
