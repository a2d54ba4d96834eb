import type { Generated } from 'kysely';
import type { BounceClass } from '../../domain/emails/bounce-classes.ts';
import type { EmailStatus, Lifecycle, RecipientStatus } from '../../domain/emails/status.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Json, Timestamp } from '../column-types.ts';

/** An entry of `emails.recipients` (projections/email-changes.ts): the API's field names. */
export interface RecipientEntry {
  email: string;
  status: RecipientStatus;
  attempts: number;
  smtp_code: number | null;
  smtp_response: string | null;
  bounce_type: 'hard' | 'soft' | null;
  /** A bounce's class, or a delay's (null once delivered); absent from entries written before classes. */
  classification?: BounceClass | null;
  next_attempt_at: string | null;
  updated_at: string;
}

export interface EmailsTable {
  id: string;
  org_id: string;
  mode: Mode;
  status: EmailStatus;
  lifecycle: Lifecycle;
  from_address: string;
  to_addresses: Json<string[]>;
  cc_addresses: Json<string[]>;
  bcc_addresses: Json<string[]>;
  reply_to: Json<string[]>;
  subject: string;
  html: string | null;
  text_body: string | null;
  headers: Json<Record<string, string>>;
  tags: string[];
  domain_id: string | null;
  domain_name: string;
  template_id: string | null;
  template_version_id: string | null;
  suppressed_recipients: Json<string[]>;
  recipients: Json<RecipientEntry[]>;
  message_id: string | null;
  send_at: Timestamp | null;
  created_at: Timestamp;
  last_event: string;
  last_event_at: Timestamp;
  opens: Generated<number>;
  clicks: Generated<number>;
  /** The broadcast the email was sent for, if any. */
  broadcast_id: string | null;
  /** The topic the email is about (`topic_id`), and the recipients left out because it does not reach them. */
  topic_id: string | null;
  unsubscribed_recipients: Json<string[]> | null;
}

/** The clicks of each link of an email (projections/email-links.projection.ts), by the link's digest. */
export interface EmailLinkClicksTable {
  email_id: string;
  /** `lnk_` and the MD5 of the link: a short key for a link of any length, and the API's cursor. */
  link_id: string;
  link: string;
  clicks: number;
}

/** The emails whose unsubscribe link was used (projections/email-unsubscribes.projection.ts), at the first use. */
export interface EmailUnsubscribesTable {
  email_id: string;
  unsubscribed_at: Date;
}

export interface EmailAttachmentsTable {
  id: string;
  email_id: string;
  org_id: string;
  mode: Mode;
  filename: string;
  content_type: string;
  content_id: string | null;
  /** Decoded size in bytes. */
  size: number;
  blob_key: string;
}

/** Emails accepted per organization, mode and calendar month (UTC, `YYYY-MM`). */
export interface EmailUsageTable {
  org_id: string;
  mode: Mode;
  month: string;
  emails: number;
}

/**
 * The `emails` read model (written only by projections/emails.projection.ts).
 * - Each recipient's outcome lives in its email's row (`recipients`, jsonb: outcomes update it in place), so an
 *   outcome updates one row and a send inserts one.
 * - Columns only ever read back whole are json, not jsonb: the send path's insert would parse each into jsonb,
 *   about a quarter of its PostgreSQL time (json is only checked), and json keeps the headers' order.
 * - Only uncommon statuses are indexed: most of an organization's emails are delivered, or queued or sending for
 *   a moment, and those are found fast by scanning `emails_org` newest first; an email enters the partial index
 *   only when it reaches a status a user looks for among many.
 */
export const emailsMigrations: Migration[] = [
  {
    id: 'emails-001',
    sql: `
CREATE TABLE emails (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  status text NOT NULL,
  lifecycle text NOT NULL,
  from_address text NOT NULL,
  to_addresses json NOT NULL,
  cc_addresses json NOT NULL,
  bcc_addresses json NOT NULL,
  reply_to json NOT NULL,
  subject text NOT NULL,
  html text,
  text_body text,
  headers json NOT NULL,
  tags text[] NOT NULL,
  domain_id text,
  domain_name text NOT NULL,
  template_id text,
  template_version_id text,
  suppressed_recipients json NOT NULL,
  recipients jsonb NOT NULL,
  message_id text,
  send_at timestamptz,
  created_at timestamptz NOT NULL,
  last_event text NOT NULL,
  last_event_at timestamptz NOT NULL,
  opens integer NOT NULL DEFAULT 0,
  clicks integer NOT NULL DEFAULT 0
);
CREATE INDEX emails_org ON emails (org_id, mode, id);
CREATE INDEX emails_org_uncommon_status ON emails (org_id, mode, status, id)
  WHERE status NOT IN ('queued', 'sending', 'delivered');
CREATE INDEX emails_tags ON emails USING gin (tags);
CREATE TABLE email_attachments (
  id text PRIMARY KEY,
  email_id text NOT NULL,
  org_id text NOT NULL,
  mode text NOT NULL,
  filename text NOT NULL,
  content_type text NOT NULL,
  content_id text,
  size integer NOT NULL,
  blob_key text NOT NULL
);
CREATE INDEX email_attachments_email ON email_attachments (email_id);
CREATE TABLE email_usage (
  org_id text NOT NULL,
  mode text NOT NULL,
  month text NOT NULL,
  emails integer NOT NULL,
  PRIMARY KEY (org_id, mode, month)
)`,
  },
  {
    id: 'emails-002',
    // A broadcast's counts are read from its emails (read-side/broadcasts): only broadcast emails are indexed.
    sql: `ALTER TABLE emails ADD COLUMN IF NOT EXISTS broadcast_id text;
CREATE INDEX IF NOT EXISTS emails_broadcast ON emails (broadcast_id) WHERE broadcast_id IS NOT NULL`,
  },
  {
    id: 'emails-003',
    // The metrics read the emails of a range by created_at (read-side/emails/email-metrics.queries.ts): rows
    // come in about that order, which a BRIN index keeps small and cheap to maintain.
    sql: `ALTER TABLE emails ADD COLUMN IF NOT EXISTS topic_id text;
ALTER TABLE emails ADD COLUMN IF NOT EXISTS unsubscribed_recipients json;
CREATE INDEX IF NOT EXISTS emails_created ON emails USING brin (created_at)`,
  },
  {
    id: 'emails-004',
    // A broadcast's emails in id order (its recipients' pages, the emails a stopped broadcast withdraws): read from
    // the index in order, not sorted anew for each page.
    sql: `
CREATE INDEX IF NOT EXISTS emails_broadcast_id ON emails (broadcast_id, id) WHERE broadcast_id IS NOT NULL;
DROP INDEX IF EXISTS emails_broadcast;
CREATE TABLE IF NOT EXISTS email_link_clicks (
  email_id text NOT NULL,
  link_id text NOT NULL,
  link text NOT NULL,
  clicks integer NOT NULL,
  PRIMARY KEY (email_id, link_id)
)`,
  },
  {
    id: 'emails-005',
    // The emails whose unsubscribe link was used (projections/email-unsubscribes.projection.ts), for the metrics.
    sql: `CREATE TABLE IF NOT EXISTS email_unsubscribes (
  email_id text PRIMARY KEY,
  unsubscribed_at timestamptz NOT NULL
)`,
  },
];
