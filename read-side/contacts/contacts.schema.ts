import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Json, Timestamp } from '../column-types.ts';

/** Contacts as the API shows them; a deleted contact's row is removed (its personal data is forgotten). */
export interface ContactsTable {
  id: string;
  org_id: string;
  mode: Mode;
  email: string;
  /** `email` in lower case: what the `email` filter matches. */
  email_lower: string;
  first_name: string | null;
  last_name: string | null;
  unsubscribed: boolean;
  properties: Json<Record<string, string | number | boolean>>;
  consent_given_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** A contact's own choice for a topic; topics without one follow their default. */
export interface ContactTopicsTable {
  contact_id: string;
  topic_id: string;
  subscription: 'opt_in' | 'opt_out';
}

export interface ContactAudiencesTable {
  contact_id: string;
  audience_id: string;
}

/**
 * The deleted audiences, as the contacts projection learnt of them (its own table: it may run ahead of the
 * audiences projection): a membership naming one is removed, and one written after it is never added.
 */
export interface ContactDeletedAudiencesTable {
  audience_id: string;
}

export const contactsMigrations: Migration[] = [
  {
    id: 'contacts-001',
    sql: `
CREATE TABLE IF NOT EXISTS contacts (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  email text NOT NULL,
  email_lower text NOT NULL,
  first_name text,
  last_name text,
  unsubscribed boolean NOT NULL,
  properties jsonb NOT NULL,
  consent_given_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS contacts_org ON contacts (org_id, mode, id);
CREATE INDEX IF NOT EXISTS contacts_email ON contacts (org_id, mode, email_lower);
CREATE TABLE IF NOT EXISTS contact_audiences (
  contact_id text NOT NULL,
  audience_id text NOT NULL,
  PRIMARY KEY (contact_id, audience_id)
);
CREATE INDEX IF NOT EXISTS contact_audiences_audience ON contact_audiences (audience_id, contact_id);
CREATE TABLE IF NOT EXISTS contact_topics (
  contact_id text NOT NULL,
  topic_id text NOT NULL,
  subscription text NOT NULL,
  PRIMARY KEY (contact_id, topic_id)
);`,
  },
  {
    id: 'contacts-002',
    // A deleted audience leaves its contacts' memberships (docs/audiences.md). The audiences deleted before this
    // version are taken from the audiences read model, and their memberships removed, once.
    sql: `
CREATE TABLE IF NOT EXISTS contact_deleted_audiences (audience_id text PRIMARY KEY);
INSERT INTO contact_deleted_audiences (audience_id)
  SELECT id FROM audiences WHERE deleted_at IS NOT NULL ON CONFLICT DO NOTHING;
DELETE FROM contact_audiences a USING contact_deleted_audiences d WHERE a.audience_id = d.audience_id;`,
  },
];
