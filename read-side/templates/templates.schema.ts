import type { TemplateVariable } from '../../domain/templates/template.events.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Json, Timestamp } from '../column-types.ts';

export interface TemplatesTable {
  id: string;
  org_id: string;
  mode: Mode;
  name: string;
  engine: 'handlebars';
  latest_version: number;
  published_version: number | null;
  published_at: Timestamp | null;
  duplicated_from: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: Timestamp | null;
}

export interface TemplateVersionsTable {
  id: string;
  template_id: string;
  org_id: string;
  mode: Mode;
  version: number;
  subject: string;
  html: string | null;
  text: string | null;
  variables: Json<TemplateVariable[]>;
  created_at: Timestamp;
  published_at: Timestamp | null;
}

/**
 * `templates`: one row per template with the numbers of its draft and published versions;
 * `template_versions`: every version's content, immutable once written.
 */
export const templatesMigrations: Migration[] = [
  {
    id: 'templates-001',
    sql: `
CREATE TABLE IF NOT EXISTS templates (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  name text NOT NULL,
  engine text NOT NULL,
  latest_version integer NOT NULL,
  published_version integer,
  published_at timestamptz,
  duplicated_from text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE INDEX IF NOT EXISTS templates_org ON templates (org_id, mode, id);
CREATE TABLE IF NOT EXISTS template_versions (
  id text PRIMARY KEY,
  template_id text NOT NULL,
  org_id text NOT NULL,
  mode text NOT NULL,
  version integer NOT NULL,
  subject text NOT NULL,
  html text,
  text text,
  variables jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  published_at timestamptz,
  UNIQUE (template_id, version)
);
CREATE INDEX IF NOT EXISTS template_versions_template ON template_versions (template_id, id);`,
  },
];
