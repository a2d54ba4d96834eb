import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './process.ts';

export interface TestRspamd {
  url: string;
  close(): Promise<void>;
}

/** Whether Debian's rspamd is installed here (`.ci/run` installs it); tests that need it skip, saying so, without. */
export const hasRspamd = spawnSync('rspamd', ['--version']).status === 0;

/**
 * A real rspamd on loopback: Debian's configuration copied into a folder of its own, its normal worker on a free
 * port, and every DNS query (RBLs, maps) sent to `dnsServer` (the test's loopback DNS server), so no traffic
 * leaves the machine. Its first start compiles its rules, which takes a while.
 */
export async function startRspamd(dnsServer: string): Promise<TestRspamd> {
  const dir = mkdtempSync(join(tmpdir(), 'postline-rspamd-'));
  const conf = join(dir, 'conf');
  const run = join(dir, 'run');
  cpSync('/etc/rspamd', conf, { recursive: true });
  mkdirSync(join(conf, 'local.d'), { recursive: true });
  mkdirSync(join(conf, 'override.d'), { recursive: true });
  mkdirSync(run);
  const [normal, controller] = [await freePort(), await freePort()];
  const local = (file: string, text: string) => writeFileSync(join(conf, 'local.d', file), text);
  // The test's DNS server answers every name; the time-out only covers an answer late on a busy machine (a
  // lookup timed out changes the score), within Postline's 5 s for rspamd's answer.
  local('options.inc', `dns { nameserver = ["${dnsServer}"]; timeout = 2s; retransmits = 1; }\n`);
  local('worker-normal.inc', `bind_socket = "127.0.0.1:${normal}";\ncount = 1;\n`);
  local('worker-controller.inc', `bind_socket = "127.0.0.1:${controller}";\n`);
  local('worker-proxy.inc', 'enabled = false;\n');
  local('logging.inc', 'type = "console";\nlevel = "error";\n');
  // The fuzzy servers are rspamd.com's: off, with everything else that would reach past this machine.
  writeFileSync(join(conf, 'override.d', 'fuzzy_check.conf'), 'enabled = false;\n');
  const child: ChildProcess = spawn(
    'rspamd',
    [
      '-f',
      '-u',
      'root',
      '-g',
      'root',
      '-c',
      join(conf, 'rspamd.conf'),
      `--var=CONFDIR=${conf}`,
      `--var=LOCAL_CONFDIR=${conf}`,
      `--var=DBDIR=${run}`,
      `--var=RUNDIR=${run}`,
    ],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const url = `http://127.0.0.1:${normal}`;
  const close = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (const deadline = Date.now() + 120_000; ; ) {
    if (child.exitCode !== null) throw new Error(`rspamd exited: ${output}`);
    const up = await fetch(`${url}/ping`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return { url, close };
    if (Date.now() > deadline) {
      await close();
      throw new Error(`rspamd did not start: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
