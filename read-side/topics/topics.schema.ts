import type { DefaultSubscription } from '../../domain/topics/topic.events.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Timestamp } from '../column-types.ts';

export interface TopicsTable {
  id: string;
  org_id: string;
  mode: Mode;
  name: string;
  description: string | null;
  default_subscription: DefaultSubscription;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: Timestamp | null;
}

export const topicsMigrations: Migration[] = [
  {
    id: 'topics-001',
    sql: `
CREATE TABLE IF NOT EXISTS topics (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  name text NOT NULL,
  description text,
  default_subscription text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE INDEX IF NOT EXISTS topics_org ON topics (org_id, mode, id) WHERE deleted_at IS NULL;`,
  },
];
