import type { Transaction } from '../platform/db/database.ts';
import { type DueChange, DueQueue, type Task } from '../platform/due/due-queue.ts';
import type { DueTable } from '../platform/due/due-sql.ts';
import type { StoredEvent } from '../platform/eventstore/types.ts';
import type { Services } from '../platform/services.ts';
import { ProcessManager } from './process.ts';

/**
 * A process manager whose work is a due table (due-queue.ts), declared in one shape: what each event of the log
 * does to the table (`dueChange`, applied in the consumer's transaction), and what the rows claimed become
 * (`plan`: tasks that finish their rows). `work()` drains what is due now, `batch` rows a claim and `concurrency`
 * tasks at a time, until the process stops.
 */
export abstract class DueProcess<Row extends object> extends ProcessManager {
  protected readonly services: Services;
  protected readonly due: DueQueue<Row>;
  readonly #drain: { batch: number; concurrency: number };

  constructor(
    services: Services,
    o: { name: string; everyMs: number; table: DueTable; batch: number; concurrency: number },
  ) {
    super(services, o);
    this.services = services;
    this.due = new DueQueue(services, o.table);
    this.#drain = { batch: o.batch, concurrency: o.concurrency };
  }

  /** What an event does to the due table, if anything (one change, or several). */
  protected abstract dueChange(event: StoredEvent): DueChange | DueChange[] | undefined;

  /** The tasks that work claimed rows (DueQueue.drain). */
  protected abstract plan(rows: Row[]): Task[];

  /** An event that changes nothing in the due table leaves the process alone (`consume` applies only changes). */
  protected override acts(event: StoredEvent): boolean {
    const change = this.dueChange(event);
    return Array.isArray(change) ? change.length > 0 : change !== undefined;
  }

  protected override async consume(tx: Transaction, events: StoredEvent[]): Promise<void> {
    await this.due.apply(
      tx,
      events.flatMap((e) => this.dueChange(e) ?? []),
    );
  }

  /**
   * A drain waiting for its tasks at each group's cap claims again: the timer's rows may be due now, or those the
   * log brought. A batch of the log that brought none does not wake it (most, while it delivers: its own events).
   */
  protected override woken(fromLog: boolean): void {
    this.due.wake({ ifApplied: fromLog });
  }

  /** Works off every row due now; resolves with how many items the tasks did. */
  protected work(): Promise<number> {
    return this.due.drain({ ...this.#drain, signal: this.stopping }, (rows) => this.plan(rows));
  }
}
