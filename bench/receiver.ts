/**
 * The receiving server of `bench:smtp` for Postline and for Postfix alike: smtp-server in a process of its own,
 * as the receiver of real mail would be. `until(n)` resolves (with performance.now()) once it has accepted n
 * messages in all.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

export interface Receiver {
  port: number;
  count(): number;
  until(n: number): Promise<number>;
  close(): void;
}

export async function startReceiver(): Promise<Receiver> {
  const child: ChildProcess = fork(join(import.meta.dirname, 'smtp-sink.process.ts'), { stdio: 'inherit' });
  let count = 0;
  let waiting: { n: number; resolve: (at: number) => void } | undefined;
  const port = await new Promise<number>((resolve) =>
    child.on('message', (m: { port?: number; count?: number }) => {
      if (m.port) resolve(m.port);
      if (m.count !== undefined) {
        count = m.count;
        if (waiting && count >= waiting.n) waiting.resolve(performance.now());
      }
    }),
  );
  return {
    port,
    count: () => count,
    until: (n: number) =>
      new Promise<number>((resolve) => {
        if (count >= n) resolve(performance.now());
        else waiting = { n, resolve };
      }),
    close: () => child.kill(),
  };
}
