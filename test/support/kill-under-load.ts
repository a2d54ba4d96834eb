import type { ChildProcess } from 'node:child_process';
import nodemailer from 'nodemailer';
import { expect } from 'vitest';
import { PATIENCE_MS } from './patience.ts';

/** A client of the SMTP relay, on its self-signed certificate, signing in with an API key (a connection a message). */
export const relayClient = (port: number, key: string) =>
  nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    requireTLS: true,
    auth: { user: 'postline', pass: key },
    tls: { rejectUnauthorized: false },
  });

/** The email's id the relay's `250` names. */
const queuedId = (sent: { response: string }) => /queued as (em_\w+)/.exec(sent.response)?.[1];

/** A sender for `killUnderLoad`: a message through the relay to the simulator's delivered address; its email's id. */
export const relaySender =
  (relay: ReturnType<typeof relayClient>, content: { subject: string; text: string }) => async () =>
    queuedId(
      await relay.sendMail({ from: 'dev@example.test', to: 'delivered@simulator.postline.dev', ...content }),
    );

/**
 * Runs every sender over and over until the service's process is killed (SIGKILL), once at least `atLeast` sends
 * were acknowledged. A sender resolves to what its acknowledgement names (an email's id, a subject), or to
 * undefined when it got none; a send that fails counts as unacknowledged. Resolves once the process is gone and
 * every sender has stopped, to all that was acknowledged: what a crash test must find again after a restart.
 */
export async function killUnderLoad(
  child: ChildProcess,
  senders: Array<() => Promise<string | undefined>>,
  atLeast: number,
): Promise<string[]> {
  const acknowledged: string[] = [];
  let killed = false;
  const run = async (send: () => Promise<string | undefined>) => {
    while (!killed) {
      const named = await send().catch(() => undefined);
      if (named) acknowledged.push(named);
    }
  };
  const load = Promise.all(senders.map(run));
  await expect.poll(() => acknowledged.length, { timeout: PATIENCE_MS }).toBeGreaterThanOrEqual(atLeast);
  // A process that died by itself has an exit code or a signal already, and no 'exit' to come.
  const running = child.exitCode === null && child.signalCode === null;
  const exited = running ? new Promise((r) => child.once('exit', r)) : undefined;
  child.kill('SIGKILL');
  await exited;
  killed = true;
  await load;
  return acknowledged;
}
