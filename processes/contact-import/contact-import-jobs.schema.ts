import type { Migration } from '../../platform/db/migrations.ts';

/** `contact_import_jobs`: a due row per contact import under way (due-queue.ts), worked by the import process. */
export const contactImportMigrations: Migration[] = [
  {
    id: 'contact-import-jobs-001',
    sql: `CREATE TABLE IF NOT EXISTS contact_import_jobs (
  import_id text PRIMARY KEY,
  due_at timestamptz NOT NULL,
  claimed_until timestamptz
);
CREATE INDEX IF NOT EXISTS contact_import_jobs_due ON contact_import_jobs (due_at)`,
  },
];
