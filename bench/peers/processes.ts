/** Starting and stopping the peers' processes: wait for a port, stop by pid (TERM, then KILL). */
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { processAlive } from '../../platform/process-alive.ts';

export interface Peer {
  /** As printed beside the figures, e.g. `Postfix 3.7.11`. */
  name: string;
  port: number;
  stop(): Promise<void>;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Resolves once 127.0.0.1:port accepts connections; rejects after `ms` or when `alive()` turns false. */
export async function waitForPort(
  port: number,
  ms = 30_000,
  alive: () => boolean = () => true,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await accepts(port))) {
    if (!alive()) throw new Error(`the process meant to listen on port ${port} exited`);
    if (Date.now() > deadline) throw new Error(`nothing listens on port ${port} after ${ms} ms`);
    await sleep(50);
  }
}

/** A process and its children (Haraka's master and its cluster worker), from /proc. */
export function processFamily(pid: number): number[] {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'latin1').split(' ').filter(Boolean).map(Number),
  );
  return [pid, ...children];
}

/** Waits up to `ms` for pid to exit; then kills it. Only ever called with the pid of a process the bench started. */
export async function stopPid(
  pid: number,
  ms = 15_000,
  signal: NodeJS.Signals | null = 'SIGTERM',
): Promise<void> {
  if (signal && processAlive(pid)) process.kill(pid, signal);
  const deadline = Date.now() + ms;
  while (processAlive(pid) && Date.now() < deadline) await sleep(50);
  if (processAlive(pid)) process.kill(pid, 'SIGKILL');
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Postline's rate as a share of the peer's, e.g. `82 %`. */
export const ratio = (postline: number, peer: number) => `${Math.round((100 * postline) / peer)} %`;

/** Runs a and b one after the other, b first on even runs, so that neither side always follows the other. */
export async function alternately<A, B>(
  run: number,
  a: () => Promise<A>,
  b?: () => Promise<B>,
): Promise<[A, B | undefined]> {
  if (!b) return [await a(), undefined];
  if (run % 2 === 1) {
    const first = await a();
    return [first, await b()];
  }
  const second = await b();
  return [await a(), second];
}

/**
 * Resolves once pid has used under 5 % of a core over 250 ms (or after `ms`): work Postline does after its last
 * `250`, such as projections catching up, must not run into the peer's measurement.
 */
export async function quiet(pid: number, cpuSeconds: (pid: number) => number, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  let before = cpuSeconds(pid);
  while (Date.now() < deadline) {
    await sleep(250);
    const now = cpuSeconds(pid);
    if (now - before < 0.0125) return;
    before = now;
  }
}
