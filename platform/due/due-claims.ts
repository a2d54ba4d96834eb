import { BoundedMap } from '../bounded-map.ts';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import type { Logger } from '../logger.ts';
import type { DueTable } from './due-sql.ts';

/** A row given back after failed work is due again after this, doubling per failure in a row, up to the lease. */
const FIRST_BACK_OFF_MS = 1000;
/** Rows whose failures in a row are remembered (for the back-off): beyond that, the oldest start again at 1 s. */
const MAX_FAILING_ROWS = 10_000;

/**
 * A row claimed here: `until` is the lease end this process wrote last, null once the row is no longer its own;
 * `finishing` once its work is done and its finish waits to be written (`writing`: the statement is under way).
 */
type Held<Row> = { row: Row; until: Date | null; again?: Row; finishing?: 'waiting' | 'writing' };

/**
 * The rows a DueQueue holds in this process (claimed here, their finish not written yet), their leases kept alive
 * and given back. Every statement names a row with the lease end this process wrote for it (`claimed_until =
 * ours`), so it never touches a claim another process made after this one's had run out: that row is then no
 * longer held, and a finish of it is not written.
 *
 * - **Heartbeat.** While rows are held, their leases are extended every `heartbeatMs` (a third of the lease by
 *   default), so a lease can be short (a crashed process's rows come back within it) however long the work
 *   takes. A heartbeat that fails (the database away) is tried again at the next beat; once the lease has run
 *   out another process may claim the row, and the work on a row must allow for that (it looks at the truth).
 * - **Finishing.** A row whose work is done stays held, its lease renewed, until its finish is written: were it
 *   let go at once, its lease could run out while finishes wait for their batch, and another claim run it again.
 * - **Give-back.** A row its work left unfinished (the work failed) is given back at once: free again after a
 *   back-off of 1 s, doubling with each failure of that row in a row, never longer than the lease.
 */
export class HeldClaims<Row extends object> {
  readonly #db: Database;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #spec: DueTable;
  readonly #heartbeatMs: number;
  readonly #sql: { renew: string; giveBack: string };
  readonly #held = new Map<string, Held<Row>>();
  /** How many rows held are finishing (not counted in `size`), and the renewals under way. */
  #finishing = 0;
  readonly #renewals = new Set<Promise<unknown>>();
  readonly #failures = new BoundedMap<string, number>(MAX_FAILING_ROWS);
  #heartbeat?: NodeJS.Timeout;
  #renewing?: Promise<void>;

  constructor(
    o: { db: Database; clock: Clock; log: Logger; heartbeatMs?: number },
    spec: DueTable,
    names: { keyRecord: string[]; sameKey: string },
  ) {
    this.#db = o.db;
    this.#clock = o.clock;
    this.#log = o.log;
    this.#spec = spec;
    this.#heartbeatMs = o.heartbeatMs ?? Math.max(1, Math.floor(spec.leaseMs / 3));
    const { table } = spec;
    const record = (...extra: string[]) => [...names.keyRecord, ...extra].join(', ');
    this.#sql = {
      renew: `UPDATE ${table} t SET claimed_until = $1
        FROM json_to_recordset($2::json) AS x(${record('ours timestamptz')})
        WHERE ${names.sameKey} AND t.claimed_until = x.ours
        RETURNING ${Object.keys(spec.key)
          .map((k) => `t.${k}`)
          .join(', ')}`,
      giveBack: `UPDATE ${table} t SET claimed_until = x.free_at
        FROM json_to_recordset($1::json) AS x(${record('ours timestamptz', 'free_at timestamptz')})
        WHERE ${names.sameKey} AND t.claimed_until = x.ours`,
    };
  }

  /** How many rows held have their work under way (finishing rows left out). */
  get size(): number {
    return this.#held.size - this.#finishing;
  }

  /**
   * Takes the rows a claim returned, leased until `until`; returns those new here. A row still held here (its
   * lease had run out while its work went on, say during a database outage) is only renewed by the claim: its
   * work is under way already and is not handed out twice.
   */
  take(rows: Row[], until: Date): Row[] {
    const fresh: Row[] = [];
    for (const row of rows) {
      const held = this.#held.get(this.keyText(row));
      if (held) {
        held.until = until;
        held.again = row;
      } else {
        this.#held.set(this.keyText(row), { row, until });
        fresh.push(row);
      }
    }
    if (this.#held.size > 0 && !this.#heartbeat) {
      this.#heartbeat = setInterval(() => this.#beat(), this.#heartbeatMs);
      this.#heartbeat.unref();
    }
    return fresh;
  }

  /** The row's work is done: held (its lease renewed) until its finish is written (`writing`), its failures forgotten. */
  finishing(row: Row): void {
    const key = this.keyText(row);
    const held = this.#held.get(key);
    if (held && !held.finishing) [held.finishing, this.#finishing] = ['waiting', this.#finishing + 1];
    this.#failures.delete(key);
  }

  /**
   * The finishing rows' finishes are about to be written: each named by its key and the lease end it is still this
   * process's by (`ours`; null: another claim holds it, its finish is not to be written). Renewals under way are
   * waited for (one committed after the finish read its lease end would make it miss); later ones leave these rows
   * alone. `written` lets them go once the statement ended.
   */
  async writing(rows: Row[]): Promise<(Record<string, unknown> | null)[]> {
    const held = rows.map((row) => this.#held.get(this.keyText(row)));
    for (const h of held) if (h?.finishing) h.finishing = 'writing';
    await Promise.all(this.#renewals);
    return held.map((h) =>
      h?.finishing && h.until ? { ...this.keyOf(h.row), ours: h.until.toISOString() } : null,
    );
  }

  /** The finishes of `rows` were written (or failed: a row whose finish is lost comes back once its lease ran out). */
  written(rows: Row[]): void {
    for (const row of rows) if (this.#held.get(this.keyText(row))?.finishing) this.#forget(this.keyText(row));
  }

  /**
   * Extends the lease of every row held here whose claim is still this process's; a row another process claimed
   * meanwhile (or a log consumer freed) is no longer renewed. The heartbeat calls it; tests may too.
   */
  async renew(): Promise<void> {
    const renewal = this.#renew();
    this.#renewals.add(renewal);
    try {
      await renewal;
    } finally {
      this.#renewals.delete(renewal);
    }
  }

  async #renew(): Promise<void> {
    // Rows whose finish is being written are left alone: the finish names them by the lease end it read.
    const mine = [...this.#held].flatMap(([key, held]) =>
      held.until && held.finishing !== 'writing' ? [{ key, held, ours: held.until }] : [],
    );
    if (mine.length === 0) return;
    const until = new Date(this.#clock.now().getTime() + this.#spec.leaseMs);
    const entries = mine.map(({ held, ours }) => ({ ...this.keyOf(held.row), ours: ours.toISOString() }));
    const { rows } = await this.#db.query(this.#sql.renew, [until, JSON.stringify(entries)]);
    const renewed = new Set(rows.map((r) => this.keyText(r)));
    // A claim may have renewed a row while this statement ran: its lease end is then the claim's.
    for (const { key, held, ours } of mine)
      if (held.until === ours) held.until = renewed.has(key) ? until : null;
  }

  /**
   * Gives back the rows of `rows` still held and not finishing (their work ended without finishing them): due again
   * after their back-off, or at once with `now` (the process stops: nothing failed).
   */
  async giveBack(rows: Row[], o: { now?: boolean } = {}): Promise<void> {
    const at = this.#clock.now().getTime();
    const given: { row: Row; key: string; held: Held<Row> }[] = [];
    for (const row of rows) {
      const key = this.keyText(row);
      const held = this.#held.get(key);
      if (!held || held.finishing) continue;
      this.#forget(key);
      given.push({ row, key, held });
    }
    // As `writing` does: a renewal under way may move their lease ends.
    await Promise.all(this.#renewals);
    const entries: Record<string, unknown>[] = [];
    for (const { row, key, held } of given) {
      if (!held.until) continue;
      let freeAt: string | null = null;
      if (!o.now) {
        const failures = (this.#failures.get(key) ?? 0) + 1;
        this.#failures.set(key, failures);
        const backOff = Math.min(FIRST_BACK_OFF_MS * 2 ** (failures - 1), this.#spec.leaseMs);
        freeAt = new Date(at + backOff).toISOString();
      }
      entries.push({ ...this.keyOf(row), ours: held.until.toISOString(), free_at: freeAt });
    }
    if (entries.length > 0) await this.#db.query(this.#sql.giveBack, [JSON.stringify(entries)]);
  }

  /** How many rows held here each group (the value of `column`) has. */
  perGroup(column: string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { row, finishing } of this.#held.values()) {
      if (finishing) continue;
      const group = String((row as Record<string, unknown>)[column]);
      counts.set(group, (counts.get(group) ?? 0) + 1);
    }
    return counts;
  }

  /**
   * The row's work wrote what became of it: no longer held, unless a claim took it again while its work went on
   * (it was made due again meanwhile): then it is held as that claim returned it, which this returns.
   */
  settled(row: Row): Row | undefined {
    const key = this.keyText(row);
    const held = this.#held.get(key);
    if (!held?.again) {
      this.#forget(key);
      this.#failures.delete(key);
      return undefined;
    }
    held.row = held.again;
    held.again = undefined;
    return held.row;
  }

  /** Every row held here whose work is under way (finishing rows left out). */
  all(): Row[] {
    return [...this.#held.values()].flatMap((h) => (h.finishing ? [] : [h.row]));
  }

  keyOf(row: object): Record<string, unknown> {
    return Object.fromEntries(
      Object.keys(this.#spec.key).map((k) => [k, (row as Record<string, unknown>)[k]]),
    );
  }

  keyText(row: object): string {
    return JSON.stringify(Object.keys(this.#spec.key).map((k) => (row as Record<string, unknown>)[k]));
  }

  /** The row is no longer held. */
  #forget(key: string): void {
    if (this.#held.get(key)?.finishing) this.#finishing--;
    this.#held.delete(key);
  }

  #beat(): void {
    if (this.#held.size === 0) {
      clearInterval(this.#heartbeat);
      this.#heartbeat = undefined;
      return;
    }
    // Still beating while finishing rows wait for their finish: `#held.size`, not `size`.
    this.#renewing ??= this.renew()
      .catch((err) =>
        this.#log.warn({ err, table: this.#spec.table }, 'could not renew the claims held; trying again'),
      )
      .finally(() => {
        this.#renewing = undefined;
      });
  }
}
