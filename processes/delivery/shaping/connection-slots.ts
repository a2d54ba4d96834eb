import type { Clock } from '../../../platform/clock.ts';
import type { Database } from '../../../platform/db/database.ts';
import { randomToken } from '../../../platform/ids.ts';
import type { Logger } from '../../../platform/logger.ts';

/** A connection slot of a group, held while its connection is open. */
export interface SlotLease {
  group: string;
  slot: number;
  /** Gives the slot back (once; later calls do nothing). */
  release(): Promise<void>;
}

export interface ConnectionSlotsOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  /** A slot not renewed for this long is free again (its process died). Default 30 s, renewed every third. */
  leaseMs?: number;
}

export const DEFAULT_LEASE_MS = 30_000;

/**
 * A group's `connections` shared by every worker process: each open connection to the group holds one of its
 * slots (0 … connections − 1) in `shaping_connections`, leased with a time that this process renews for all its
 * slots in one statement every third of the lease; a crashed process's slots come back when their lease ends.
 */
export class ConnectionSlots {
  readonly #o: Required<ConnectionSlotsOptions>;
  /** This process (this instance) in the table. */
  readonly holder = `h_${randomToken(16)}`;
  #held = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: ConnectionSlotsOptions) {
    this.#o = { leaseMs: DEFAULT_LEASE_MS, ...options };
  }

  /**
   * Takes a free slot of the group (one whose lease ended counts as free), or null when all `connections` are
   * held. Two processes racing for one slot: the loser tries the next, `connections` tries at most.
   */
  async acquire(group: string, connections: number): Promise<SlotLease | null> {
    for (let attempt = 0; attempt < connections; attempt++) {
      const now = this.#o.clock.now();
      const { rows } = await this.#o.db.query<{ slot: number }>(
        `INSERT INTO shaping_connections AS c (grp, slot, holder, until)
SELECT $1::text, s, $2::text, $3::timestamptz + make_interval(secs => $5::float8) FROM generate_series(0, $4::int - 1) s
WHERE NOT EXISTS (SELECT 1 FROM shaping_connections h WHERE h.grp = $1::text AND h.slot = s AND h.until > $3::timestamptz)
ORDER BY s LIMIT 1
ON CONFLICT (grp, slot) DO UPDATE SET holder = EXCLUDED.holder, until = EXCLUDED.until WHERE c.until <= $3::timestamptz
RETURNING slot`,
        [group, this.holder, now.toISOString(), connections, this.#o.leaseMs / 1000],
      );
      const slot = rows[0]?.slot;
      if (slot !== undefined) return this.#lease(group, slot);
      const free = await this.#o.db.query(
        'SELECT 1 FROM shaping_connections WHERE grp = $1 AND slot < $2 AND until > $3 HAVING count(*) < $2',
        [group, connections, now.toISOString()],
      );
      if (free.rowCount === 0) return null;
    }
    return null;
  }

  #lease(group: string, slot: number): SlotLease {
    this.#held++;
    this.#timer ??= setInterval(() => void this.renew(), Math.max(100, this.#o.leaseMs / 3)).unref();
    let released = false;
    return {
      group,
      slot,
      release: async () => {
        if (released) return;
        released = true;
        if (--this.#held === 0) this.#stopRenewing();
        try {
          await this.#o.db.query(
            'DELETE FROM shaping_connections WHERE grp = $1 AND slot = $2 AND holder = $3',
            [group, slot, this.holder],
          );
        } catch (err) {
          // The lease runs out by itself.
          this.#o.log.warn({ err, group, slot }, 'could not release a connection slot');
        }
      },
    };
  }

  /** Extends every slot this process holds. A failure (the database away) lets the leases run on to their end. */
  async renew(): Promise<void> {
    const until = new Date(this.#o.clock.now().getTime() + this.#o.leaseMs).toISOString();
    try {
      await this.#o.db.query('UPDATE shaping_connections SET until = $2 WHERE holder = $1', [
        this.holder,
        until,
      ]);
    } catch (err) {
      this.#o.log.warn({ err }, 'could not renew the connection slots');
    }
  }

  #stopRenewing(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Stops renewing; the slots still held are released by their connections' close, or run out. */
  close(): void {
    this.#stopRenewing();
  }
}
