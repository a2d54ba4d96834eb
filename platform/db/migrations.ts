import type { Database } from './database.ts';

export interface Migration {
  /** Unique and stable, e.g. `api-keys-001`. Applied once, in the order given. */
  id: string;
  sql: string;
}

/** Serialises migrations across processes that start at once. */
const MIGRATIONS_LOCK = 7332;

/**
 * Applies the migrations not yet applied, each in a transaction of its own: a long one would hold back every
 * reader of the log (they read below the oldest running transaction). Safe when several processes start at once:
 * each migration is applied under an advisory lock after checking again that no one else applied it.
 */
export async function migrate(db: Database, migrations: Migration[]): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(${MIGRATIONS_LOCK})`);
    await tx.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
  });
  const { rows } = await db.query<{ id: string }>('SELECT id FROM schema_migrations');
  const applied = new Set(rows.map((r) => r.id));
  for (const m of migrations) {
    if (applied.has(m.id)) continue;
    await db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(${MIGRATIONS_LOCK})`);
      const done = await tx.query('SELECT 1 FROM schema_migrations WHERE id = $1', [m.id]);
      if (done.rowCount > 0) return;
      for (const statement of splitStatements(m.sql)) await tx.query(statement);
      await tx.query('INSERT INTO schema_migrations (id) VALUES ($1)', [m.id]);
    });
  }
}

/** Splits on `;` at line ends; migrations keep function bodies on one line or use no semicolons inside. */
function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*\n/)
    .map((s) => s.trim().replace(/;$/, ''))
    .filter(Boolean);
}
