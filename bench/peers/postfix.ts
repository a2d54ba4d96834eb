/**
 * A private Postfix instance for `bench:smtp`: its own configuration and queue in a temporary directory (on the
 * same disk as Postline's data), smtpd on a free loopback port, relaying everything it accepts to the bench's
 * receiver. Postfix answers `250` once the message is in its queue file, synced; no port 25 or 587, no DNS, no
 * local delivery. Needs Debian's `postfix` package and root (Postfix drops to its `postfix` user itself).
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { processAlive } from '../../platform/process-alive.ts';
import { freePort } from '../../test/support/process.ts';
import { type Peer, stopPid, waitForPort } from './processes.ts';

const run = promisify(execFile);
const POSTFIX = '/usr/sbin/postfix';
export const POSTFIX_MISSING = 'Postfix not installed: apt-get install postfix (the bench runs it itself)';

function mainCf(dir: string, relayPort: number): string {
  return `compatibility_level = 3.6
queue_directory = ${dir}/queue
data_directory = ${dir}/data
myhostname = relay.peer.test
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
mydestination =
local_recipient_maps =
local_transport = error:local delivery disabled
alias_maps =
alias_database =
relayhost = [127.0.0.1]:${relayPort}
smtpd_relay_restrictions = permit_mynetworks, reject
smtpd_peername_lookup = no
smtp_dns_support_level = disabled
smtp_host_lookup = native
smtp_tls_security_level = none
default_destination_concurrency_limit = 20
maillog_file = ${dir}/maillog
maillog_file_prefixes = ${dir}
`;
}

/** Only what a relay uses; no chroot, so that the temporary queue needs no copy of /etc. */
function masterCf(port: number): string {
  return `127.0.0.1:${port} inet n - n - - smtpd
cleanup unix n - n - 0 cleanup
qmgr unix n - n 300 1 qmgr
rewrite unix - - n - - trivial-rewrite
bounce unix - - n - 0 bounce
defer unix - - n - 0 bounce
trace unix - - n - 0 bounce
verify unix - - n - 1 verify
flush unix n - n 1000? 0 flush
proxymap unix - - n - - proxymap
smtp unix - - n - - smtp
relay unix - - n - - smtp
showq unix n - n - - showq
error unix - - n - - error
retry unix - - n - - error
discard unix - - n - - discard
anvil unix - - n - 1 anvil
scache unix - - n - 1 scache
postlog unix-dgram n - n - 1 postlogd
`;
}

/** Starts Postfix relaying to 127.0.0.1:relayPort; undefined (with the reason printed) when it cannot. */
export async function startPostfix(relayPort: number): Promise<Peer | undefined> {
  if (!existsSync(POSTFIX)) {
    console.log(POSTFIX_MISSING);
    return undefined;
  }
  if (process.getuid?.() !== 0) {
    console.log('Postfix skipped: running an instance of its own needs root');
    return undefined;
  }
  const dir = mkdtempSync(join(os.tmpdir(), 'postline-bench-postfix-'));
  chmodSync(dir, 0o755); // Postfix's own user reaches its queue through it
  mkdirSync(join(dir, 'queue'));
  const port = await freePort();
  writeFileSync(join(dir, 'main.cf'), mainCf(dir, relayPort));
  writeFileSync(join(dir, 'master.cf'), masterCf(port));
  let pid = 0;
  const stop = async () => {
    await run(POSTFIX, ['-c', dir, 'stop']).catch(() => {});
    if (pid) await stopPid(pid, 15_000, null);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await run(POSTFIX, ['-c', dir, 'start']);
    pid = Number(readFileSync(join(dir, 'queue', 'pid', 'master.pid'), 'latin1').trim());
    await waitForPort(port, 30_000, () => processAlive(pid));
    const { stdout } = await run('/usr/sbin/postconf', ['-c', dir, '-h', 'mail_version']);
    return { name: `Postfix ${stdout.trim()}`, port, stop };
  } catch (error) {
    const log = existsSync(join(dir, 'maillog'))
      ? readFileSync(join(dir, 'maillog'), 'utf8').slice(-2000)
      : '';
    console.log(`Postfix did not start: ${(error as Error).message}\n${log}`);
    await stop();
    return undefined;
  }
}
