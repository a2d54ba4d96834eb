import type { BroadcastStatus } from '../../domain/broadcasts/broadcast.events.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Json, Timestamp } from '../column-types.ts';

/**
 * Broadcasts as the API shows them, with the progress of their sending; what became of their emails is counted
 * from the `emails` read model (`emails.broadcast_id`) when one is read.
 */
export interface BroadcastsTable {
  id: string;
  org_id: string;
  mode: Mode;
  name: string;
  audience_id: string;
  topic_id: string | null;
  from_address: string;
  reply_to: Json<string[]>;
  subject: string | null;
  html: string | null;
  text_body: string | null;
  template_id: string | null;
  preview_text: string | null;
  status: BroadcastStatus;
  send_at: Timestamp | null;
  /** Contacts of the audience looked at so far, and of those, how many got an email. */
  contacts_processed: number;
  recipients: number;
  skipped_unsubscribed: number;
  skipped_suppressed: number;
  skipped_not_subscribed: number;
  skipped_quota: number;
  skipped_failed: number;
  /** Contacts that unsubscribed by the link in one of its emails, each once (`broadcast_unsubscribes`). */
  unsubscribed: number;
  created_at: Timestamp;
  updated_at: Timestamp;
  started_at: Timestamp | null;
  sent_at: Timestamp | null;
  canceled_at: Timestamp | null;
  deleted_at: Timestamp | null;
}

/** Who unsubscribed by a broadcast's link: one row per contact, however often it did (what `unsubscribed` counts). */
export interface BroadcastUnsubscribesTable {
  broadcast_id: string;
  contact_id: string;
}

export const broadcastsMigrations: Migration[] = [
  {
    id: 'broadcasts-001',
    sql: `
CREATE TABLE IF NOT EXISTS broadcasts (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  name text NOT NULL,
  audience_id text NOT NULL,
  topic_id text,
  from_address text NOT NULL,
  reply_to jsonb NOT NULL,
  subject text,
  html text,
  text_body text,
  template_id text,
  status text NOT NULL,
  send_at timestamptz,
  contacts_processed integer NOT NULL DEFAULT 0,
  recipients integer NOT NULL DEFAULT 0,
  skipped_unsubscribed integer NOT NULL DEFAULT 0,
  skipped_suppressed integer NOT NULL DEFAULT 0,
  skipped_not_subscribed integer NOT NULL DEFAULT 0,
  skipped_quota integer NOT NULL DEFAULT 0,
  skipped_failed integer NOT NULL DEFAULT 0,
  unsubscribed integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  started_at timestamptz,
  sent_at timestamptz,
  canceled_at timestamptz,
  deleted_at timestamptz
);
CREATE INDEX IF NOT EXISTS broadcasts_org ON broadcasts (org_id, mode, id) WHERE deleted_at IS NULL;`,
  },
  {
    id: 'broadcasts-002',
    // Each contact counts once per broadcast, however often it uses the link (docs/broadcasts.md).
    sql: `
CREATE TABLE IF NOT EXISTS broadcast_unsubscribes (
  broadcast_id text NOT NULL,
  contact_id text NOT NULL,
  PRIMARY KEY (broadcast_id, contact_id)
);`,
  },
  {
    id: 'broadcasts-003',
    sql: 'ALTER TABLE broadcasts ADD COLUMN IF NOT EXISTS preview_text text;',
  },
];
