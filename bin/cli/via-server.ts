import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { type CommandOutcome, END_OF_OUTPUT } from './admin-protocol.ts';
import { withAbsoluteFile } from './arguments.ts';
import { currentOwner, type Owner } from './data-dir-owner.ts';

/**
 * How long a command waits for a server that owns the data dir but does not listen yet: a first start sets up its
 * PostgreSQL first.
 */
const START_PATIENCE_MS = 120_000;

/** Where the server listens for this machine's CLI: loopback when it binds every interface, else its address. */
function adminHost(host: string | undefined): string {
  if (!host || host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** Embedded mode with a running server: the command is run inside it (POST /admin/cli, admin.ts). */
export async function viaServer(dataDir: string, owner: Owner, argv: string[]): Promise<number> {
  const res = await whenListening(dataDir, owner, () =>
    request(`http://${adminHost(owner.host)}:${owner.port}/admin/cli`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-postline-admin-token': owner.adminToken! },
      body: JSON.stringify({ argv: withAbsolutePaths(argv) }),
    }),
  );
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

/**
 * The command, sent once the server listens: a server that owns the data dir may still be starting. A refused
 * connection sent nothing, so sending again runs the command once; the wait ends if the owner stops.
 */
async function whenListening<T>(dataDir: string, owner: Owner, send: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + START_PATIENCE_MS;
  let said = false;
  while (true) {
    try {
      return await send();
    } catch (error: any) {
      if (error?.code !== 'ECONNREFUSED') throw error;
      if (currentOwner(dataDir)?.pid !== owner.pid)
        throw new Error(`the service (process ${owner.pid}) stopped before it answered.`);
      if (Date.now() > deadline)
        throw new Error(
          `the service (process ${owner.pid}) did not listen on port ${owner.port} within ${START_PATIENCE_MS / 1000} s.`,
        );
      if (!said) process.stderr.write(`Waiting for the service (process ${owner.pid}) to finish starting…\n`);
      said = true;
      await sleep(250);
    }
  }
}

/**
 * The arguments with the files they name as absolute paths: a relative path means the operator's working
 * directory, and a running server, which works the command, has another.
 */
function withAbsolutePaths(argv: string[]): string[] {
  if (argv[0] === 'contacts' && argv[1] === 'import')
    return [...argv.slice(0, 2), ...withAbsoluteFile(argv.slice(2))];
  return argv;
}
