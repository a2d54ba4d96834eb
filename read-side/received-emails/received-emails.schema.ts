import type {
  Authentication,
  MailAddress,
  ReceivedAttachment,
} from '../../domain/received-emails/received-email.events.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Json, Timestamp } from '../column-types.ts';

export interface ReceivedEmailsTable {
  id: string;
  org_id: string;
  mode: Mode;
  domain_id: string | null;
  domain: string | null;
  envelope_from: string;
  envelope_to: Json<string[]>;
  from_email: string | null;
  /** `from_email` in lower case: what the `from` filter matches. */
  from_lower: string | null;
  from_name: string | null;
  to: Json<MailAddress[]>;
  cc: Json<MailAddress[]>;
  reply_to: Json<MailAddress[]>;
  subject: string | null;
  message_id: string | null;
  in_reply_to: string | null;
  size: number;
  raw_key: string;
  content_key: string | null;
  /** The headers' blob, kept after the retention; null when unknown (see InboundEmailReceived's `headersKey`). */
  headers_key: string | null;
  attachments: Json<ReceivedAttachment[]>;
  authentication: Json<Authentication>;
  spam_score: number;
  is_spam: boolean;
  parse_error: string | null;
  created_at: Timestamp;
  /** Set when the retention deleted the raw message, content and attachments. */
  purged_at: Timestamp | null;
}

export const receivedEmailsMigrations: Migration[] = [
  {
    id: 'received-emails-001',
    sql: `
CREATE TABLE IF NOT EXISTS received_emails (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  domain_id text,
  domain text,
  envelope_from text NOT NULL,
  envelope_to jsonb NOT NULL,
  from_email text,
  from_lower text,
  from_name text,
  "to" jsonb NOT NULL,
  cc jsonb NOT NULL,
  reply_to jsonb NOT NULL,
  subject text,
  message_id text,
  in_reply_to text,
  size integer NOT NULL,
  raw_key text NOT NULL,
  content_key text,
  attachments jsonb NOT NULL,
  authentication jsonb NOT NULL,
  spam_score real NOT NULL,
  is_spam boolean NOT NULL,
  parse_error text,
  created_at timestamptz NOT NULL,
  purged_at timestamptz
);
CREATE INDEX IF NOT EXISTS received_emails_org ON received_emails (org_id, mode, id);
CREATE INDEX IF NOT EXISTS received_emails_retention ON received_emails (created_at) WHERE purged_at IS NULL;`,
  },
  {
    // The headers have a blob of their own, which the retention keeps.
    id: 'received-emails-002',
    sql: 'ALTER TABLE received_emails ADD COLUMN IF NOT EXISTS headers_key text;',
  },
];
