import type { Migration } from '../../platform/db/migrations.ts';

/**
 * Pauses of destinations, from the queue's events (projections/delivery-pauses.projection.ts): rebuilt from the
 * log. `org_id` '' is a pause of every organization's mail. A pause ends on its own: `until` is compared with the
 * time whenever it is read (the queue view, the delivery claim), so an ended pause may stay as a row.
 */
export const queueMigrations: Migration[] = [
  {
    id: 'queue-001',
    sql: `
CREATE TABLE IF NOT EXISTS delivery_pauses (
  org_id text NOT NULL,
  destination text NOT NULL,
  until timestamptz NOT NULL,
  reason text,
  paused_by text NOT NULL,
  PRIMARY KEY (org_id, destination)
)`,
  },
];
