import { type SelectQueryBuilder, sql } from 'kysely';
import type { PageParams } from '../platform/http/pagination.ts';

export interface Page<T> {
  object?: 'list';
  data: T[];
  has_more: boolean;
}

/**
 * The order of a list, newest first: by its id column (`id`, ids sort by creation time), or by the column `by`
 * (then by id among equal values) where the ids' order is not the list's, e.g. version numbers.
 */
export type PageOrder = string | { id?: string; by: string };

/**
 * Cursor pagination, newest first. `starting_after` pages towards older items, `ending_before` towards newer
 * ones. A cursor is an id, so a page stays put under concurrent inserts. Ordered `by` another column, the cursor
 * stands where its row is in the same list; a cursor not in the list gives an empty page.
 */
export async function paginate<DB, TB extends keyof DB, O extends { id: string }>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: PageParams,
  order: PageOrder = 'id',
): Promise<Page<O>> {
  const { id, by } = typeof order === 'string' ? { id: order, by: undefined } : { id: 'id', ...order };
  const idCol = sql.ref<string>(id);
  const newer = Boolean(page.endingBefore);
  const cursor = (newer ? page.endingBefore : page.startingAfter) || undefined;
  let q = query;
  if (cursor !== undefined && by === undefined) q = q.where(idCol, newer ? '>' : '<', cursor);
  if (cursor !== undefined && by !== undefined) {
    const at = query
      .clearSelect()
      .select([sql.ref(by).as('by'), idCol.as('id')])
      .where(idCol, '=', cursor);
    q = q.where(sql<boolean>`(${sql.ref(by)}, ${idCol}) ${sql.raw(newer ? '>' : '<')} (${at})`);
  }
  const direction = newer ? 'asc' : 'desc';
  if (by !== undefined) q = q.orderBy(sql.ref(by), direction);
  const rows = await q
    .orderBy(idCol, direction)
    .limit(page.limit + 1)
    .execute();
  const data = rows.slice(0, page.limit);
  return { data: newer ? data.reverse() : data, has_more: rows.length > page.limit };
}

/** A page of `query` as the API lists it, `{object: "list", data, has_more}`, its rows made into `data` by `json`. */
export async function listPage<DB, TB extends keyof DB, O extends { id: string }, T>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: PageParams,
  json: (rows: O[]) => T[] | Promise<T[]>,
  order?: PageOrder,
) {
  const result = await paginate(query, page, order);
  return { object: 'list' as const, data: await json(result.data), has_more: result.has_more };
}

export const iso = (v: Date | string | null | undefined): string | null =>
  v ? new Date(v).toISOString() : null;
