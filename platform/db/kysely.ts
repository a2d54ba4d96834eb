import type { Compilable } from 'kysely';
import type { Queryable } from './database.ts';

/** Runs a kysely-built query on any Queryable (a transaction in a projection, say). */
export async function run<R = any>(q: Queryable, query: Compilable<R>): Promise<R[]> {
  const compiled = query.compile();
  const { rows } = await q.query<R>(compiled.sql, compiled.parameters as unknown[]);
  return rows;
}
