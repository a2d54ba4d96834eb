import type { Database } from '../platform/db/database.ts';
import { AppError } from '../platform/errors.ts';
import type { Position } from '../platform/eventstore/types.ts';
import { CHECKPOINT_CHANNEL } from './projection.ts';
import type { ProjectionRunner } from './runner.ts';

/**
 * Read-your-writes: a mutating request waits until the projections serving its resource have reached the
 * position of its last event, so the GET that follows sees it. Checkpoints of this process's runner arrive
 * in memory; those of other processes by NOTIFY, with polling as the fallback. Bounded: past the deadline the
 * client gets a 503 rather than a stale answer.
 */
export class ProjectionWaiter {
  readonly #db: Database;
  readonly #known = new Map<string, Position>();
  readonly #wakers = new Set<() => void>();
  readonly #timeoutMs: number;
  #unlisten?: Promise<() => Promise<void>>;

  constructor(db: Database, runner: ProjectionRunner | undefined, timeoutMs: number) {
    this.#db = db;
    this.#timeoutMs = timeoutMs;
    runner?.events.on('checkpoint', (name: string, position: Position) => this.#learn(name, position));
  }

  #learn(name: string, position: Position) {
    if ((this.#known.get(name) ?? '') < position) this.#known.set(name, position);
    for (const wake of this.#wakers) wake();
  }

  async #refresh(names: string[]) {
    const placeholders = names.map((_, i) => `$${i + 1}`).join(',');
    const { rows } = await this.#db.query<{ name: string; position: string }>(
      `SELECT name, position FROM projection_checkpoints WHERE name IN (${placeholders})`,
      names,
    );
    for (const r of rows) this.#learn(r.name, r.position);
  }

  #reached = (names: string[], position: Position) => names.every((n) => (this.#known.get(n) ?? '') >= position);

  async waitFor(names: string[], position: Position | undefined): Promise<void> {
    if (!position || names.length === 0 || this.#reached(names, position)) return;
    this.#unlisten ??= this.#db.listen(CHECKPOINT_CHANNEL, () => {
      for (const wake of this.#wakers) wake();
    });
    await this.#unlisten;
    const deadline = Date.now() + this.#timeoutMs;
    let pollMs = 5;
    while (true) {
      await this.#refresh(names);
      if (this.#reached(names, position)) return;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new AppError('projection_timeout', 'The change was saved but is not readable yet; retry the read shortly.');
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.#wakers.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(pollMs, left));
        this.#wakers.add(wake);
      });
      pollMs = Math.min(pollMs * 2, 200);
    }
  }

  async close() {
    if (this.#unlisten) await (await this.#unlisten)();
  }
}
