import type { Migration } from '../../platform/db/migrations.ts';

/** The `emails` read model (written only by projections/emails.projection.ts). */
export const emailsMigrations: Migration[] = [
  {
    id: 'emails-001',
    sql: `
CREATE TABLE IF NOT EXISTS emails (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  status text NOT NULL,
  lifecycle text NOT NULL,
  from_address text NOT NULL,
  to_addresses jsonb NOT NULL,
  cc_addresses jsonb NOT NULL,
  bcc_addresses jsonb NOT NULL,
  reply_to jsonb NOT NULL,
  subject text NOT NULL,
  html text,
  text_body text,
  headers jsonb NOT NULL,
  tags text[] NOT NULL,
  domain_id text,
  domain_name text NOT NULL,
  template_id text,
  template_version_id text,
  suppressed_recipients jsonb NOT NULL,
  message_id text,
  send_at timestamptz,
  created_at timestamptz NOT NULL,
  last_event text NOT NULL,
  last_event_at timestamptz NOT NULL,
  opens integer NOT NULL DEFAULT 0,
  clicks integer NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS emails_org ON emails (org_id, mode, id);
CREATE INDEX IF NOT EXISTS emails_org_status ON emails (org_id, mode, status, id);
CREATE INDEX IF NOT EXISTS emails_tags ON emails USING gin (tags);
CREATE TABLE IF NOT EXISTS email_recipients (
  email_id text NOT NULL,
  address text NOT NULL,
  org_id text NOT NULL,
  mode text NOT NULL,
  status text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  smtp_code integer,
  smtp_response text,
  bounce_type text,
  next_attempt_at timestamptz,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (email_id, address)
);
CREATE TABLE IF NOT EXISTS email_attachments (
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
CREATE INDEX IF NOT EXISTS email_attachments_email ON email_attachments (email_id);
CREATE TABLE IF NOT EXISTS email_usage (
  org_id text NOT NULL,
  mode text NOT NULL,
  month text NOT NULL,
  emails integer NOT NULL,
  PRIMARY KEY (org_id, mode, month)
)`,
  },
  {
    // Every send paid for an index on (org, mode, status, id), and every status change moved the row in it.
    // Statuses most of an organization's emails have for long (delivered) or only briefly (queued, sending) are
    // found fast by scanning emails_org newest first; the rest, the ones a user looks for among many, keep an
    // index that an email enters only when it reaches them.
    id: 'emails-002',
    sql: `
DROP INDEX IF EXISTS emails_org_status;
CREATE INDEX IF NOT EXISTS emails_org_uncommon_status ON emails (org_id, mode, status, id)
  WHERE status NOT IN ('queued', 'sending', 'delivered')`,
  },
  {
    // Each recipient's outcome lives in its email's row: a send wrote a row per recipient as well (their
    // insert cost as much as the email's), and every outcome updated two rows where one now does.
    id: 'emails-003',
    sql: `
ALTER TABLE emails ADD COLUMN IF NOT EXISTS recipients jsonb NOT NULL DEFAULT '[]';
UPDATE emails e SET recipients = r.list FROM (
  SELECT email_id, jsonb_agg(jsonb_build_object('email', address, 'status', status, 'attempts', attempts,
    'smtp_code', smtp_code, 'smtp_response', smtp_response, 'bounce_type', bounce_type,
    'next_attempt_at', to_char(next_attempt_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY address) AS list
  FROM email_recipients GROUP BY email_id
) r WHERE e.id = r.email_id;
ALTER TABLE emails ALTER COLUMN recipients DROP DEFAULT;
DROP TABLE email_recipients`,
  },
  {
    // Columns only ever read back whole are json, not jsonb: the send path's insert parsed each of them into
    // jsonb, about a quarter of its PostgreSQL time (json is only checked). json also keeps the headers' order.
    id: 'emails-004',
    sql: `
ALTER TABLE emails ALTER COLUMN to_addresses TYPE json, ALTER COLUMN cc_addresses TYPE json,
  ALTER COLUMN bcc_addresses TYPE json, ALTER COLUMN reply_to TYPE json, ALTER COLUMN headers TYPE json,
  ALTER COLUMN suppressed_recipients TYPE json`,
  },
];
