import type { Clock } from '../clock.ts';
import type { Database, Queryable } from '../db/database.ts';
import type { Logger } from '../logger.ts';
import { HeldClaims } from './due-claims.ts';
import { claimParameters, type DueTable, dueStatements, plainNames } from './due-sql.ts';

/** Work on claimed rows: resolves with how many items it did. */
export type Task = () => Promise<number>;

/**
 * What one event does to a due table. `add`: a row (column → value, its due time included), left alone when its
 * key is there already. `set`: the same, or a row that is there due at the new time instead (`unclaim`: and free
 * to be claimed again at once). `remove`: the rows with this key, if any; a key column after the first that it
 * leaves out matches every value (every destination's job of an email).
 */
export type DueChange =
  | { add: Record<string, unknown> }
  | { set: Record<string, unknown>; unclaim?: boolean }
  | { remove: Record<string, unknown> };

/** Finished rows written per statement. */
const FINISH_BATCH = 50;

/**
 * A table of due rows worked by any number of processes: a claim takes due rows that no live claim holds, FOR
 * UPDATE SKIP LOCKED (claims in other processes pass each other by) and leased in the same statement, so no
 * transaction stays open during the work. The leases are short and renewed while the work goes on (heartbeat);
 * a crashed process's rows come back once their lease runs out, and rows whose work failed are given back at
 * once (due-claims.ts). What became of a row (done, or due again later) is written in batches, the row held until
 * then, and only while this process's claim holds it: a finish lost in a crash only brings the row back when its
 * lease runs out, so the work on a row must be safe to do again (it looks at the truth first).
 */
export class DueQueue<Row extends object> {
  readonly #db: Database;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #spec: DueTable;
  readonly #sql: { claim: string; remove: string; done: string; later: string };
  #finished: { row: Row; dueAt: string | null; then: Record<string, unknown>[] }[] = [];
  /** Rows claimed here, their finish not written yet: their leases renewed, given back when their work fails or stops. */
  readonly #held: HeldClaims<Row>;
  readonly #writing = new Set<Promise<void>>();
  /** Wake-ups so far (`wake`), the promise the next one resolves, and whether changes were applied since the last. */
  #wakes = 0;
  #woken = Promise.withResolvers<void>();
  #applied = false;

  /** `heartbeatMs`: how often the leases held are renewed (default a third of the lease). */
  constructor(o: { db: Database; clock: Clock; log: Logger; heartbeatMs?: number }, spec: DueTable) {
    this.#db = o.db;
    this.#clock = o.clock;
    this.#log = o.log;
    this.#spec = spec;
    const { keyRecord, sameKey, ...sql } = dueStatements(spec);
    this.#held = new HeldClaims(o, spec, { keyRecord, sameKey });
    this.#sql = sql;
  }

  /** Adds rows (column → value; JSON for `jsonb` columns), unclaimed; a row whose key is there already is left alone. */
  async add(q: Queryable, rows: Record<string, unknown>[]): Promise<void> {
    await this.#insert(q, rows, 'DO NOTHING');
  }

  /**
   * Applies changes (a log consumer's, in its transaction) in their order; a run of changes of one kind goes in
   * one statement.
   */
  async apply(q: Queryable, changes: DueChange[]): Promise<void> {
    if (changes.length > 0) this.#applied = true;
    for (let i = 0; i < changes.length; ) {
      const kind = kindOf(changes[i]);
      const run: Record<string, unknown>[] = [];
      for (; i < changes.length && kindOf(changes[i]) === kind; i++) {
        const c = changes[i];
        run.push('add' in c ? c.add : 'set' in c ? c.set : this.#held.keyOf(c.remove));
      }
      if (kind === 'add') await this.add(q, run);
      else if (kind === 'remove') await q.query(this.#sql.remove, [JSON.stringify(run)]);
      else {
        const { dueAt } = this.#spec;
        // One statement may not update a row twice: the last change of a key is the one that counts.
        const last = new Map(run.map((row) => [this.#held.keyText(row), row]));
        await this.#insert(
          q,
          [...last.values()],
          `(${Object.keys(this.#spec.key).join(', ')}) DO UPDATE SET ${dueAt} = excluded.${dueAt}${
            kind === 'unclaim' ? ', claimed_until = NULL' : ''
          }`,
        );
      }
    }
  }

  async #insert(q: Queryable, rows: Record<string, unknown>[], onConflict: string): Promise<void> {
    if (rows.length === 0) return;
    // The columns the rows name (the others keep their defaults), read as jsonb (docs/architecture.md).
    const columns = plainNames(Object.keys(rows[0])).join(', ');
    const { table } = this.#spec;
    await q.query(
      `INSERT INTO ${table} (${columns}) SELECT ${columns} FROM jsonb_populate_recordset(NULL::${table}, $1::jsonb)
       ON CONFLICT ${onConflict}`,
      [JSON.stringify(rows)],
    );
  }

  /**
   * Claims up to `limit` rows due now, oldest first (then by key), and holds them: their leases are renewed until
   * they are finished or given back. A row whose work is still under way here is not returned again.
   */
  async claim(limit: number): Promise<Row[]> {
    const now = this.#clock.now();
    const until = new Date(now.getTime() + this.#spec.leaseMs);
    const held = this.#spec.groups ? this.#held.perGroup(this.#spec.groups.column) : new Map();
    const parameters = claimParameters(this.#spec, { now, until, limit, held });
    const { rows } = await this.#db.query<Row>(this.#sql.claim, parameters);
    return this.#held.take(rows, until);
  }

  /**
   * Rows may have become due (added and committed elsewhere): a drain waiting at each group's cap claims again at
   * once, so that tasks one group holds for long (a slow server) keep no other group's new row waiting.
   * `ifApplied`: only if changes were applied here since the last wake-up (a log consumer's batch that brought none
   * has nothing new to claim).
   */
  wake(o: { ifApplied?: boolean } = {}): void {
    if (o.ifApplied && !this.#applied) return;
    this.#applied = false;
    this.#wakes++;
    this.#woken.resolve();
    this.#woken = Promise.withResolvers<void>();
  }

  /** Renews the leases of the rows held here (what the heartbeat does every third of the lease). */
  renew(): Promise<void> {
    return this.#held.renew();
  }

  /**
   * Gives back rows claimed here whose work failed: free again after a short back-off, not after the lease; with
   * `now`, at once (their work never started: the process stops).
   */
  giveBack(rows: Row[], o: { now?: boolean } = {}): Promise<void> {
    return this.#track(this.#held.giveBack(rows, o));
  }

  /** A row whose work wrote its outcome itself (due-claims.ts `settled`): the row a claim took again, if any. */
  settled(row: Row): Row | undefined {
    return this.#held.settled(row);
  }

  /**
   * A claimed row is done (`dueAt` null: removed) or due again at `dueAt`, unclaimed; written with the next batch,
   * after the rows its work led to (`then`, added as `add` does): a crash that loses them brings the row back.
   * The row stays held until then; its finish is not written if another claim holds it by then.
   */
  finish(row: Row, dueAt: Date | string | null, then: Record<string, unknown>[] = []): void {
    this.#held.finishing(row);
    this.#finished.push({ row, dueAt: dueAt instanceof Date ? dueAt.toISOString() : dueAt, then });
    if (this.#finished.length >= FINISH_BATCH) this.#write();
  }

  /** Writes every finish so far. */
  async flush(): Promise<void> {
    this.#write();
    await Promise.all(this.#writing);
  }

  /**
   * Works off every row due now: claims `batch` rows at a time and hands them to `plan`, which turns them into tasks
   * (one per row, or per rows that go together); `concurrency` tasks run at once, and the next batch is claimed
   * while the tasks in hand still keep every worker busy (claim ahead), until a claim finds nothing (rows added
   * during the run are the run's too). A claim of a grouped table that came back short while this process held
   * rows (each group's cap, or the rows due ran out) is made again once a fifth of the workers' tasks have ended
   * (all of them, if fewer run), or on `wake`: at the caps, a claim per task that ends would take a row at a time,
   * each claim reading every group. A task finishes its rows; once every task of a claim
   * has ended, the rows of that claim still unfinished (a task threw, or gave up) are given back (`giveBack`). Once
   * `signal` aborts (the process stops), no task is started any more: the tasks running finish, and the rows
   * claimed but not finished are given back at once, for another process to take without waiting for the lease.
   * Returns the sum of what the tasks resolved with, once their finishes are written.
   */
  async drain(
    o: { batch: number; concurrency: number; signal?: AbortSignal },
    plan: (rows: Row[]) => Task[],
  ): Promise<number> {
    type Claimed = { rows: Row[]; running: number };
    const tasks: { task: Task; claimed: Claimed }[] = [];
    let [done, exhausted] = [0, false];
    // The last claim came back short while this process held rows: claim again once `refill` tasks have ended.
    const refill = Math.ceil(o.concurrency / 5);
    let [capped, running, ended, cappedAt] = [false, 0, 0, 0];
    let taskEnded = Promise.withResolvers<void>();
    let failure: unknown;
    let claiming: Promise<void> | undefined;
    const claimAhead = () => {
      // Rows held when the claim began (its tasks may have ended by its answer): the caps it met were theirs.
      const [wakes, held] = [this.#wakes, this.#spec.groups !== undefined && this.#held.size > 0];
      claiming ??= this.claim(o.batch)
        .then((rows) => {
          // Woken during the claim: rows committed after it began may be due (not capped: claim again).
          if (rows.length < o.batch && held) [capped, cappedAt] = [wakes === this.#wakes, ended];
          else if (rows.length === 0) exhausted = true;
          const planned = plan(rows);
          const claimed = { rows, running: planned.length };
          if (planned.length === 0) void this.giveBack(rows);
          tasks.push(...planned.map((task) => ({ task, claimed })));
        })
        .catch((err) => {
          // Thrown once the workers have finished what they hold.
          exhausted = true;
          failure = err;
        })
        .finally(() => {
          claiming = undefined;
        });
    };
    const next = async () => {
      for (;;) {
        if (o.signal?.aborted) return undefined;
        if (!exhausted && !capped && tasks.length <= o.concurrency) claimAhead();
        const task = tasks.shift();
        // Counted as running once taken, before its worker resumes: a worker finding no task reads `running`.
        if (task) running++;
        if (task || (exhausted && !claiming)) return task;
        if (capped && !claiming) {
          // Tasks still run: claim again once `refill` (or all) have ended, or on a wake. None: at once, unless rows
          // are still held (then the drain is done).
          if (running === 0 && this.#held.size > 0) exhausted = true;
          const woken = this.#woken.promise.then(() => true);
          while (running > 0 && ended < cappedAt + refill)
            if (await Promise.race([taskEnded.promise.then(() => false), woken])) break;
          capped = false;
        } else await claiming;
      }
    };
    const worker = async () => {
      for (let entry = await next(); entry; entry = await next()) {
        const { task, claimed } = entry;
        try {
          // Not `done += await task()`: that reads `done` before the await and loses the other workers' counts.
          const n = await task();
          done += n;
        } catch (err) {
          this.#log.error({ err, table: this.#spec.table }, 'due work failed; its rows are given back');
        }
        if (--claimed.running === 0) void this.giveBack(claimed.rows);
        running--;
        ended++;
        taskEnded.resolve();
        taskEnded = Promise.withResolvers<void>();
      }
    };
    try {
      await Promise.all(Array.from({ length: o.concurrency }, worker));
      await claiming;
      if (o.signal?.aborted) await this.#track(this.#held.giveBack(this.#held.all(), { now: true }));
    } finally {
      await this.flush();
    }
    if (failure) throw failure;
    return done;
  }

  /** Runs a write of claims in the background of the drain: `flush` waits for it; a failure is logged. */
  #track(write: Promise<void>, failed = 'could not give back due rows'): Promise<void> {
    const writing = write
      // Rows whose give-back or finish is lost come back once their lease runs out.
      .catch((err) => this.#log.error({ err, table: this.#spec.table }, failed))
      .then(() => {
        this.#writing.delete(writing);
      });
    this.#writing.add(writing);
    return writing;
  }

  #write(): void {
    const batch = this.#finished;
    if (batch.length === 0) return;
    this.#finished = [];
    const [rows, then] = [batch.map((f) => f.row), batch.flatMap((f) => f.then)];
    const write = async () => {
      await this.add(this.#db, then);
      // Each row named by its key and the lease end it is held by; rows another claim holds are left out.
      const named = await this.#held.writing(rows);
      const [done, later] = [true, false].map((isDone) =>
        batch.flatMap((f, i) =>
          named[i] && (f.dueAt === null) === isDone ? [{ ...named[i], due_again: f.dueAt }] : [],
        ),
      );
      await Promise.all([
        done.length > 0 && this.#db.query(this.#sql.done, [JSON.stringify(done)]),
        later.length > 0 && this.#db.query(this.#sql.later, [JSON.stringify(later)]),
      ]);
    };
    const written = write().finally(() => this.#held.written(rows));
    void this.#track(written, 'could not write finished due rows');
  }
}

const kindOf = (c: DueChange) =>
  'add' in c ? 'add' : 'remove' in c ? 'remove' : c.unclaim ? 'unclaim' : 'set';
