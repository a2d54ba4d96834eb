import { type SelectQueryBuilder, sql } from 'kysely';
import type { PageParams } from '../platform/http/pagination.ts';

export interface Page<T> {
  object?: 'list';
  data: T[];
  has_more: boolean;
}

/**
 * Cursor pagination over ids that sort by creation time, newest first. `starting_after` pages towards older
 * items, `ending_before` towards newer ones. A cursor is an id, so a page stays put under concurrent inserts.
 */
export async function paginate<DB, TB extends keyof DB, O extends { id: string }>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: PageParams,
  idColumn = 'id',
): Promise<Page<O>> {
  const col = sql.ref<string>(idColumn);
  if (page.endingBefore) {
    const rows = await query
      .where(col, '>', page.endingBefore)
      .orderBy(col, 'asc')
      .limit(page.limit + 1)
      .execute();
    return { data: rows.slice(0, page.limit).reverse(), has_more: rows.length > page.limit };
  }
  const q = page.startingAfter ? query.where(col, '<', page.startingAfter) : query;
  const rows = await q
    .orderBy(col, 'desc')
    .limit(page.limit + 1)
    .execute();
  return { data: rows.slice(0, page.limit), has_more: rows.length > page.limit };
}

/** A page of `query` as the API lists it, `{object: "list", data, has_more}`, its rows made into `data` by `json`. */
export async function listPage<DB, TB extends keyof DB, O extends { id: string }, T>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: PageParams,
  json: (rows: O[]) => T[] | Promise<T[]>,
  idColumn?: string,
) {
  const result = await paginate(query, page, idColumn);
  return { object: 'list' as const, data: await json(result.data), has_more: result.has_more };
}

export const iso = (v: Date | string | null | undefined): string | null =>
  v ? new Date(v).toISOString() : null;
