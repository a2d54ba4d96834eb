import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Database } from '../../db/database.ts';
import { type Position, START } from '../types.ts';
import { CHANNEL } from './schema.ts';

/**
 * How long subscribers (the process managers, the projection runner) hear of appends after the first of them, the
 * appends in between sharing the wake-up: under load each wake-up costs every consumer a read of the log and a
 * transaction. 50 ms rather than 20 took the relay from 6.3 to 4.1 statements a message and 5.0 to 4.8 ms of CPU
 * (bench/README.md, 2026-11-29); email goes out, and webhooks leave, that much later. A request waiting for its own
 * write wakes the projection runner at once.
 */
export const WAKE_AFTER_MS = 50;

/**
 * How long an append's NOTIFY waits for others to share it: as long as its listeners would gather appends anyway
 * (WAKE_AFTER_MS), so a NOTIFY sent sooner buys them nothing, and each one costs a transaction of its own
 * (PostgreSQL commits notifying transactions one at a time).
 */
const NOTIFY_DELAY_MS = WAKE_AFTER_MS;

/**
 * Who hears of appends, and how: this store's subscribers are woken (at once, or `wakeAfterMs` later with the
 * appends in between sharing the wake-up), other processes through NOTIFY after commit, and this process hears
 * theirs through LISTEN. Each wake-up costs each subscriber a read of the log and of its checkpoint and a
 * checkpoint write: woken per append under load, that was most of the database's statements.
 */
export class AppendNotifier {
  readonly #db: Database;
  readonly #wake = new EventEmitter();
  /** Signs this store's NOTIFYs, so that it does not wake itself twice. */
  readonly #id = randomUUID();
  readonly #wakeAfterMs: number;
  #wakeTimer?: NodeJS.Timeout;
  /** Append notifications received so far. */
  appends = 0;
  /** Times LISTEN was put in place (at first, and again after its connection was lost): subscribers read again. */
  resumes = 0;
  /**
   * The furthest position appends were announced at (by this store, NOTIFY or `appended`): a read that comes up
   * empty below it was held back by an older transaction and is tried again soon; one at or past it is not.
   */
  announced: Position = START;
  /** The furthest position this store appended at: what its next NOTIFY announces. */
  #toAnnounce: Position = START;
  #unlisten?: Promise<() => Promise<void>>;
  #notifying = false;
  #notifyAgain = false;
  #closed = false;
  #notified: Promise<void> = Promise.resolve();

  constructor(db: Database, options: { wakeAfterMs?: number }) {
    this.#db = db;
    this.#wakeAfterMs = options.wakeAfterMs ?? 0;
    this.#wake.setMaxListeners(0);
  }

  /**
   * After an append of this store committed: wakes this process's subscribers, and other processes' through
   * NOTIFY, sent outside the appending transaction, at most NOTIFY_DELAY_MS later. Appends in the same moment
   * share one NOTIFY; one that commits while a NOTIFY is in flight asks for one more after it. The payload
   * carries the position.
   */
  committed(position: Position) {
    this.wakeSoon(position);
    if (this.#notifying) {
      this.#notifyAgain = true;
      return;
    }
    this.#notifying = true;
    this.#notified = (async () => {
      do {
        // Let the appends of the next moment share this NOTIFY: they commit before it is sent.
        await new Promise((resolve) => setTimeout(resolve, NOTIFY_DELAY_MS));
        this.#notifyAgain = false;
        const payload = `${this.#id} ${this.#toAnnounce}`;
        // NOTIFY gives its transaction an id, and so a commit record: no need to wait for that to reach disk.
        await this.#db
          .exec(
            `BEGIN; SET LOCAL synchronous_commit TO off; SELECT pg_notify('${CHANNEL}', '${payload}'); COMMIT`,
          )
          .catch(() => {});
      } while (this.#notifyAgain && !this.#closed);
      this.#notifying = false;
    })();
  }

  /** Wakes the subscribers as a NOTIFY would, for an append at `position`, at once. */
  appended(position: Position): void {
    if (position > this.announced) this.announced = position;
    this.appends++;
    this.#wake.emit('append');
  }

  /** Wakes the subscribers for an append at `position`: `wakeAfterMs` later, sharing the wake-up, or at once. */
  wakeSoon(position: Position): void {
    if (position > this.#toAnnounce) this.#toAnnounce = position;
    if (this.#wakeAfterMs <= 0) {
      this.appended(position);
      return;
    }
    this.#wakeTimer ??= setTimeout(() => {
      this.#wakeTimer = undefined;
      this.appended(this.#toAnnounce);
    }, this.#wakeAfterMs);
  }

  /** Ends every wait at once: a subscription stopping, LISTEN in place again. */
  look(): void {
    this.#wake.emit('look');
  }

  /**
   * LISTENs for other processes' appends. After a lost LISTEN connection is in place again, every subscriber
   * reads the log again at once: appends announced while it was deaf were never heard.
   */
  listening(): Promise<unknown> {
    this.#unlisten ??= this.#db.listen(
      CHANNEL,
      (payload) => {
        const [sender, position] = payload.split(' ');
        // This store's own appends woke its subscribers already.
        if (sender !== this.#id) this.wakeSoon(position);
      },
      {
        onResume: () => {
          this.resumes++;
          this.look();
        },
      },
    );
    return this.#unlisten;
  }

  /**
   * Resolves on the next append notification (true) or after `ms` or a call to `look` (false), whichever is
   * first. `seen` is the append count the caller read at: a notification that came while it was busy returns at
   * once; `resumed`, the count of LISTEN's resumptions then: one since returns at once too (false). `stopped`
   * is asked after the wait for LISTEN: a `look` sent meanwhile had no listener yet.
   */
  async waitForAppend(ms: number, seen: number, resumed: number, stopped: () => boolean): Promise<boolean> {
    await this.listening();
    if (this.appends !== seen) return true;
    if (this.resumes !== resumed || stopped()) return false;
    return new Promise<boolean>((resolve) => {
      const done = (notified: boolean) => {
        clearTimeout(timer);
        this.#wake.off('append', notify);
        this.#wake.off('look', look);
        resolve(notified);
      };
      const notify = () => done(true);
      const look = () => done(false);
      const timer = setTimeout(look, ms);
      this.#wake.on('append', notify);
      this.#wake.on('look', look);
    });
  }

  /** Waits `ms`, or until `look`. */
  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake.off('look', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake.on('look', done);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#wakeTimer);
    await this.#notified;
    if (this.#unlisten) await (await this.#unlisten)();
  }
}
