import type { Migration } from '../../../platform/db/migrations.ts';

/**
 * One row per shaping group, shared by every worker process: the GCRA's theoretical arrival times of both rates,
 * the rate factor a `halve` rule lowered (and when), the back-off level, and the hold that pauses and back-offs
 * set. `held_until` is what the delivery queue's claim reads: no job of a held group is claimed before it.
 * `shaping_connections`: a group's connection slots, each leased by the process that holds a connection open.
 */
export const shapingMigrations: Migration[] = [
  {
    id: 'shaping-001',
    sql: `CREATE TABLE IF NOT EXISTS shaping_groups (
  grp text PRIMARY KEY,
  minute_tat timestamptz,
  hour_tat timestamptz,
  rate_factor real NOT NULL DEFAULT 1,
  halved_at timestamptz,
  backoff_level int NOT NULL DEFAULT 0,
  held_until timestamptz,
  held_reason text,
  updated_at timestamptz
)`,
  },
  {
    id: 'shaping-002',
    sql: `CREATE TABLE IF NOT EXISTS shaping_connections (
  grp text NOT NULL,
  slot int NOT NULL,
  holder text NOT NULL,
  until timestamptz NOT NULL,
  PRIMARY KEY (grp, slot)
);
CREATE INDEX IF NOT EXISTS shaping_connections_holder ON shaping_connections (holder)`,
  },
];

export interface ShapingGroupRow {
  grp: string;
  minute_tat: Date | null;
  hour_tat: Date | null;
  rate_factor: number;
  halved_at: Date | null;
  backoff_level: number;
  held_until: Date | null;
  held_reason: string | null;
  updated_at: Date | null;
}
