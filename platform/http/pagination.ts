import { z } from 'zod';
import { invalidField } from '../errors.ts';
import { zonedDateTime } from './route-schema.ts';
import { parse } from './validate.ts';

export interface PageParams {
  limit: number;
  startingAfter?: string;
  endingBefore?: string;
}

const cursor = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[a-z]+_[0-9a-z]+$/, 'must be an id from a previous page');

export const pageQuery = z.object({
  limit: z.coerce
    .number({ error: 'must be an integer between 1 and 100' })
    .int('must be an integer')
    .min(1, 'must be between 1 and 100')
    .max(100, 'must be between 1 and 100')
    .default(20),
  starting_after: cursor.optional(),
  ending_before: cursor.optional(),
  after: cursor.optional().meta({ description: 'Resend’s name for `starting_after`' }),
  before: cursor.optional().meta({ description: 'Resend’s name for `ending_before`' }),
});

/** Resend's names of the cursors, each beside Postline's own: given both, which one counts would be a guess. */
function cursorOf(q: Record<string, string | undefined>, own: string, resends: string): string | undefined {
  if (q[own] !== undefined && q[resends] !== undefined)
    throw invalidField(resends, `cannot be given with ${own} (it is Resend’s name for it)`);
  return q[own] ?? q[resends];
}

/** A list's filters by creation time, both bounds included. */
export const createdBetween = { from_date: zonedDateTime.optional(), to_date: zonedDateTime.optional() };

/** The query of a list route: `limit`, the cursors and the route's own filters, nothing else. */
export const listQuery = <E extends z.ZodRawShape>(extra: E = {} as E) => pageQuery.extend(extra).strict();

/**
 * `limit` (1-100, default 20), `starting_after`, `ending_before` (not both; Resend's `after` and `before` for
 * them). Extra filters come with `extra`: their shape, or the route's declared `listQuery(filters)` itself.
 */
export function parsePage<E extends z.ZodRawShape>(
  query: unknown,
  extra?: E | z.ZodObject<E>,
): PageParams & z.infer<z.ZodObject<E>> {
  const schema = extra instanceof z.ZodObject ? extra : listQuery(extra ?? ({} as E));
  const q = parse(schema, query, 'query') as any;
  const startingAfter = cursorOf(q, 'starting_after', 'after');
  const endingBefore = cursorOf(q, 'ending_before', 'before');
  if (startingAfter && endingBefore)
    throw invalidField('ending_before', 'use either starting_after or ending_before, not both');
  const { limit, starting_after, ending_before, after, before, ...filters } = q;
  return { limit, startingAfter, endingBefore, ...filters };
}
