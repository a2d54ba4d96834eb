import type { Migration } from '../../platform/db/migrations.ts';

/** The webhooks read model (projection `webhooks`). Delivery logs are dispatcher state: processes/webhooks/schema.ts. */
export const webhooksMigrations: Migration[] = [
  {
    id: 'webhooks-001',
    sql: `
CREATE TABLE IF NOT EXISTS webhooks (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  url text NOT NULL,
  events jsonb NOT NULL,
  active boolean NOT NULL,
  disabled_reason text,
  disabled_detail text,
  disabled_at timestamptz,
  secret_rotated_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE INDEX IF NOT EXISTS webhooks_org ON webhooks (org_id, mode, id);`,
  },
];
