import { randomUUID } from 'node:crypto';
import type { Database } from '../../platform/db/database.ts';
import { type Position, START } from '../../platform/eventstore/types.ts';

export const FAN_OUT_NAME = 'webhook_fanout';
/**
 * How long the checkpoint row stays owned by a fan-out that holds deliveries whose outcomes are not recorded yet
 * (renewed while it does): another process's fan-out takes over only after that, or once it is released.
 */
export const FAN_OUT_LEASE_MS = 60_000;
const RENEW_MS = 10_000;

/**
 * Where a fan-out batch's statement may write: the checkpoint row, locked (NOWAIT: another process is writing it,
 * stand by), still where this fan-out left it, and owned by it or by nobody (a lease that ran out counts as none).
 * $N is the row's name, $O the owner, $C the position this fan-out committed last.
 */
export const ownedRow = (n: string, o: string, c: string) => `
SELECT position FROM webhook_fanout_checkpoints
WHERE name = ${n} AND position = ${c} AND (owner = ${o} OR owner IS NULL OR owner_until < now())
FOR UPDATE NOWAIT`;

/**
 * The update that ends a batch: the position moves to $L when $M, `sent_up_to` when $S (its deliveries were handed
 * over: they may be sent before they are written), and the row stays owned (lease renewed) when $H, else released.
 */
export const batchUpdate = (n: string, o: string, l: string, m: string, s: string, h: string) => `
UPDATE webhook_fanout_checkpoints SET position = CASE WHEN ${m} THEN ${l} ELSE position END,
  sent_up_to = CASE WHEN ${s} AND ${l} > sent_up_to THEN ${l} ELSE sent_up_to END,
  owner = CASE WHEN ${h} THEN ${o} END,
  owner_until = CASE WHEN ${h} THEN now() + ${FAN_OUT_LEASE_MS} * interval '1 millisecond' END,
  updated_at = now()
WHERE name = ${n}`;

const MOVE_SQL = `
WITH owned AS (${ownedRow('$1', '$2', '$3')})
${batchUpdate('$1', '$2', '$4', 'true', 'false', '$5')} AND EXISTS (SELECT FROM owned) AND owner = $2`;

/** Batches handed over whose deliveries' outcomes are not all recorded, in log order. */
interface OpenBatch {
  last: Position;
  open: number;
}

/**
 * The fan-out's checkpoint, as this fan-out sees it. Deliveries the fan-out hands to the dispatcher of its process
 * are written only with their outcome (see hand-over.ts), so the checkpoint moves past a batch only once each of
 * its deliveries is recorded (or written for a later attempt), batches in log order; meanwhile the row is owned
 * (a lease), so that no other fan-out sends them too. After a crash the fan-out starts again from the checkpoint:
 * deliveries of events up to `sentUpTo` are looked up first, and only those without a row (in flight when it
 * stopped) are sent again, under the same `webhook-id`. Every statement on the row runs one at a time here.
 */
export class FanOutCheckpoint {
  readonly owner = randomUUID();
  readonly #db: Database;
  readonly #onError: (error: unknown) => void;
  /** As committed; undefined when unknown (not loaded yet, or the row moved under us). */
  committed?: Position;
  /** Deliveries of events up to here may have been sent already. */
  sentUpTo: Position = START;
  #open: OpenBatch[] = [];
  #queue: Promise<unknown> = Promise.resolve();
  #moving = false;
  #renewal?: ReturnType<typeof setInterval>;

  constructor(db: Database, onError: (error: unknown) => void) {
    this.#db = db;
    this.#onError = onError;
  }

  /** Deliveries handed over are waiting for their outcomes to be recorded. */
  get holding(): boolean {
    return this.#open.length > 0;
  }

  /** Runs `fn` once the statements on the row before it have finished. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => {});
    return run;
  }

  async load(): Promise<Position> {
    const { rows } = await this.#db.query<{ position: string; sent_up_to: string }>(
      'SELECT position, sent_up_to FROM webhook_fanout_checkpoints WHERE name = $1',
      [FAN_OUT_NAME],
    );
    this.committed = rows[0]?.position ?? START;
    this.sentUpTo = rows[0]?.sent_up_to ?? START;
    return this.committed;
  }

  /** Forgets what it held (a stand-by, an error, lost ownership): the row is read again before the next batch. */
  reset(): void {
    this.committed = undefined;
    this.#open = [];
    this.#stopRenewal();
  }

  /**
   * A batch up to `last` is written, `handedOver` of its deliveries handed over unwritten: returns what each of
   * those calls once its outcome is recorded. `moved`: the statement moved the checkpoint to `last`.
   */
  written(last: Position, handedOver: number, moved: boolean): () => void {
    if (handedOver > 0 && last > this.sentUpTo) this.sentUpTo = last;
    if (moved) {
      this.committed = last;
      return () => {};
    }
    const batch = { last, open: handedOver };
    this.#open.push(batch);
    this.#renewal ??= setInterval(this.#renew, RENEW_MS).unref();
    return () => {
      if (--batch.open === 0) this.#move();
    };
  }

  /**
   * Moves the checkpoint past the batches whose outcomes are all recorded, one move at a time; the row is released
   * once nothing is held any more. Decided when its turn comes: a batch written meanwhile may have moved it.
   */
  #move(): void {
    if (this.#moving) return;
    this.#moving = true;
    let to: Position | undefined;
    this.exclusive(async () => {
      while (this.#open[0]?.open === 0) to = this.#open.shift()!.last;
      const from = this.committed;
      if (to === undefined || from === undefined) return;
      const hold = this.#open.length > 0;
      const target = to;
      const { rowCount } = await this.#db.query(MOVE_SQL, [FAN_OUT_NAME, this.owner, from, target, hold]);
      to = undefined;
      if (this.committed !== from) return; // reset meanwhile
      if (rowCount === 0) return this.reset(); // moved or taken by another process: we stand by
      this.committed = target;
      if (!hold) this.#stopRenewal();
    }).then(
      () => {
        this.#moving = false;
        if (this.#open[0]?.open === 0) this.#move();
      },
      (error) => {
        this.#onError(error);
        if (to !== undefined) this.#open.unshift({ last: to, open: 0 }); // tried again shortly
        setTimeout(() => {
          this.#moving = false;
          this.#move();
        }, 1000).unref();
      },
    );
  }

  #renew = (): void => {
    const from = this.committed;
    if (from === undefined) return;
    this.exclusive(async () => {
      const { rowCount } = await this.#db.query(
        `UPDATE webhook_fanout_checkpoints SET owner_until = now() + ${FAN_OUT_LEASE_MS} * interval '1 millisecond'
         WHERE name = $1 AND owner = $2 AND position = $3`,
        [FAN_OUT_NAME, this.owner, from],
      );
      if (rowCount === 0 && this.committed === from) this.reset();
    }).catch(this.#onError);
  };

  #stopRenewal(): void {
    clearInterval(this.#renewal);
    this.#renewal = undefined;
  }
}
