import type { Database } from './database.ts';

export interface Migration {
  /** Unique and stable, e.g. `api-keys-001`. Applied once, in the order given. */
  id: string;
  sql: string;
}

/** Applies the read-model migrations not yet applied; safe when several processes start at once. */
export async function migrate(db: Database, migrations: Migration[]): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(7332)');
    await tx.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const { rows } = await tx.query<{ id: string }>('SELECT id FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.id));
    for (const m of migrations) {
      if (applied.has(m.id)) continue;
      for (const statement of splitStatements(m.sql)) await tx.query(statement);
      await tx.query('INSERT INTO schema_migrations (id) VALUES ($1)', [m.id]);
    }
  });
}

/** Splits on `;` at line ends; migrations keep function bodies on one line or use no semicolons inside. */
function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*\n/)
    .map((s) => s.trim().replace(/;$/, ''))
    .filter(Boolean);
}
