import type { DisabledReason } from '../../domain/webhooks/webhook.events.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Json, Timestamp } from '../column-types.ts';

export interface WebhooksTable {
  id: string;
  org_id: string;
  mode: Mode;
  url: string;
  /** The public event types the endpoint subscribes to. */
  events: Json<string[]>;
  active: boolean;
  disabled_reason: DisabledReason | null;
  disabled_detail: string | null;
  disabled_at: Timestamp | null;
  secret_rotated_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: Timestamp | null;
}

/** The webhooks read model (projection `webhooks`). The delivery log beside it: delivery-log.schema.ts. */
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
