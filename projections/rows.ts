import type { Queryable } from '../platform/db/database.ts';

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** Column names go into the SQL text quoted (`"to"` is a keyword): only plain lower-case ones, named by code. */
function columnsOf(values: Record<string, unknown>): string[] {
  const names = Object.keys(values);
  const bad = names.find((n) => !IDENTIFIER.test(n));
  if (bad !== undefined) throw new Error(`projection row: ${bad} is not a plain column name`);
  return names.map((n) => `"${n}"`);
}

/**
 * Inserts a read model's row (column → value, JSON columns as JSON text) unless one with its id is there: the
 * event that creates it, applied again, changes nothing.
 */
export async function insertRow(tx: Queryable, table: string, row: Record<string, unknown>): Promise<void> {
  const columns = columnsOf(row);
  const params = columns.map((_, i) => `$${i + 1}`);
  await tx.query(
    `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${params.join(', ')}) ON CONFLICT (id) DO NOTHING`,
    Object.values(row),
  );
}

/** Sets columns (column → value, JSON columns as JSON text) of the row with this id, if it is there. */
export async function updateRow(
  tx: Queryable,
  table: string,
  id: string,
  values: Record<string, unknown>,
): Promise<void> {
  const assignments = columnsOf(values).map((c, i) => `${c} = $${i + 2}`);
  await tx.query(`UPDATE ${table} SET ${assignments.join(', ')} WHERE id = $1`, [
    id,
    ...Object.values(values),
  ]);
}
