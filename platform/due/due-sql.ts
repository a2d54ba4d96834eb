import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/database.ts';

/** A due table: one row per thing to do at a time, with a `claimed_until timestamptz` column for the lease. */
export interface DueTable {
  table: string;
  /** The primary key's columns, with their SQL types (finishes name rows by them). */
  key: Record<string, 'text' | 'integer'>;
  /** The `timestamptz` column saying when a row is due. */
  dueAt: string;
  /** Columns a claim returns beside the key. */
  columns: string[];
  /**
   * How long a claim lasts unless renewed: the claims held are renewed every third of it while their work goes
   * on (due-claims.ts), so it bounds how long a crashed process's rows wait, not how long work may take.
   */
  leaseMs: number;
  /**
   * A condition a row must also meet to be due, `$row` standing for the row and `$now` for the claim's time (e.g.
   * `$row.status = 'pending'`).
   */
  where?: string;
  /** With `groups`: a boolean of the row sorted first (false before true) ahead of the due time, e.g. a lane. */
  priority?: string;
  /** Boolean columns a finish sets back to false (flags that asked for one look, such as a retry now). */
  finishResets?: string[];
  /** A column each claim sets to a token of its own: work writing its outcome itself (`settled`) checks it. */
  token?: string;
  /**
   * Rows go in groups (`column`), the groups listed by a table of their own (`of`, its rows `where` hold): a
   * claim takes at most `perGroup` rows of a group, less those of it this process holds, so that one group's
   * backlog cannot fill every claim, and takes them in turn (each group's oldest row before any group's second),
   * so that one group's backlog cannot keep another's rows out of a claim.
   */
  groups?: {
    column: string;
    perGroup: number;
    of: { table: string; key: string; where?: string };
    /**
     * Groups whose rows wait behind the others (`group`: a condition on the group's key, `$group`): a claim takes
     * at most `held` of their rows, less those of them this process holds, taken in turn from each such group, so
     * that work they hold for long (a slow server) never fills every worker. The rest of the workers stay free for
     * the other groups' rows.
     */
    later?: { group: string; held: number };
  };
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** Names go into the SQL text as they are: only plain lower-case ones, never anything a user wrote. */
export function plainNames(names: string[]): string[] {
  const bad = names.find((n) => !IDENTIFIER.test(n));
  if (bad !== undefined) throw new Error(`due table: ${bad} is not a plain SQL name`);
  return names;
}

/**
 * The statements of a due table, its names checked (`where` clauses are the code's own SQL, never a user's).
 * A claim's parameters: $1 now, $2 the lease's end, $3 how many rows; then the claim's token (`token`), and for
 * `groups` the cap per group and this process's holdings (groups, counts). `claimParameters` lists them.
 */
export function dueStatements(spec: DueTable) {
  const { table, dueAt, token, groups } = spec;
  plainNames([table, dueAt, ...Object.keys(spec.key), ...spec.columns, ...(token ? [token] : [])]);
  if (groups) plainNames([groups.column, groups.of.table, groups.of.key]);
  plainNames(spec.finishResets ?? []);
  const keyNames = Object.keys(spec.key);
  const keys = keyNames.join(', ');
  const keyRecord = keyNames.map((k) => `${k} ${spec.key[k]}`);
  const sameKey = keyNames.map((k) => `t.${k} = x.${k}`).join(' AND ');
  // A removal may leave out key columns after the first (null): it matches every value there, through the
  // primary key's index all the same.
  const coveredKey = keyNames
    .map((k, i) => (i === 0 ? `t.${k} = x.${k}` : `(x.${k} IS NULL OR t.${k} = x.${k})`))
    .join(' AND ');
  let n = 4;
  const tokenAt = token ? `$${n++}` : '';
  const [capAt, groupsAt, countsAt] = groups ? [`$${n++}`, `$${n++}`, `$${n++}`] : [];
  const where = (row: string) => (spec.where ? ` AND ${conditionOf(spec.where, row, '$1')}` : '');
  const first = spec.priority ? `, (${spec.priority.replaceAll('$row', 'd')}) AS first` : '';
  const resets = (spec.finishResets ?? []).map((c) => `, ${c} = false`).join('');
  const setToken = token ? `, ${token} = ${tokenAt}` : '';
  const returned = [...keyNames, ...spec.columns, ...(token ? [token] : [])];
  // RETURNING gives the rows in no particular order: they are sorted again, oldest first.
  const later = groups?.later;
  const isLater = (g: string) => (later ? `(${later.group.replaceAll('$group', g)})` : 'false');
  // Room for rows of later groups: their cap less what this process holds of them.
  const laterRoom = later
    ? `greatest(0, ${later.held} - (SELECT coalesce(sum(h.n), 0) FROM unnest(${groupsAt}::text[], ${countsAt}::int[]) AS h(grp, n) WHERE ${isLater('h.grp')}))`
    : '';
  const claim = groups
    ? // The groups are walked from their own table and each gives its oldest rows, at most the cap less what this
      // process holds of it: a claim locks no more rows than it could take. Later groups share their room in turn.
      // The pick takes the groups in turn too (`nth`, a row's place in its group, before its age): every group's
      // oldest row comes before any group's second, so no group's backlog keeps another's rows out of a claim.
      // The rows chosen are updated where the claim locked them (ctid: a TID scan); a join on the key was planned
      // as a scan of the whole table. A row another process changed since the statement began is left to the next.
      `WITH candidates AS (
          SELECT c.ctid, ${keyNames.map((k) => `c.${k}`).join(', ')}, c.${dueAt}, c.first, ${isLater('g.' + groups.of.key)} AS later,
            row_number() OVER (PARTITION BY g.${groups.of.key} ORDER BY c.${dueAt}) AS nth FROM ${groups.of.table} g
          LEFT JOIN unnest(${groupsAt}::text[], ${countsAt}::int[]) AS b(grp, n) ON b.grp = g.${groups.of.key}
          CROSS JOIN LATERAL (
            SELECT d.ctid, ${keyNames.map((k) => `d.${k}`).join(', ')}, d.${dueAt}${first || ', false AS first'} FROM ${table} d
            WHERE d.${groups.column} = g.${groups.of.key} AND d.${dueAt} <= $1
              AND (d.claimed_until IS NULL OR d.claimed_until < $1)${where('d')}
            ORDER BY d.${dueAt} LIMIT greatest(0, least(${capAt} - coalesce(b.n, 0), $3${
              later ? `, CASE WHEN ${isLater('g.' + groups.of.key)} THEN ${laterRoom} ELSE $3 END` : ''
            }))
            FOR UPDATE OF d SKIP LOCKED) c
          ${groups.of.where ? `WHERE ${groups.of.where.replaceAll('$row', 'g')}` : ''}
        ), chosen AS (
          SELECT ctid FROM (
            SELECT *, row_number() OVER (PARTITION BY later ORDER BY nth, ${dueAt}, ${keys}) AS turn FROM candidates) r
          WHERE ${later ? `NOT r.later OR r.turn <= ${laterRoom}` : 'true'}
          ORDER BY ${spec.priority ? 'first, ' : ''}nth, ${dueAt}, ${keys} LIMIT $3
        ), claimed AS (
          UPDATE ${table} t SET claimed_until = $2${setToken}
          WHERE t.ctid = ANY (ARRAY(SELECT ctid FROM chosen))
          RETURNING ${[...keyNames, dueAt, ...spec.columns, ...(token ? [token] : [])].map((c) => `t.${c}`).join(', ')})
        SELECT ${returned.join(', ')} FROM claimed
        ORDER BY ${spec.priority ? `${spec.priority.replaceAll('$row', 'claimed')}, ` : ''}${dueAt}, ${keys}`
    : `WITH claimed AS (
          UPDATE ${table} SET claimed_until = $2${setToken}
          WHERE (${keys}) IN (
            SELECT ${keys} FROM ${table}
            WHERE ${dueAt} <= $1 AND (claimed_until IS NULL OR claimed_until < $1)${where(table)}
            ORDER BY ${dueAt}, ${keys} LIMIT $3 FOR UPDATE SKIP LOCKED)
          RETURNING ${[keys, dueAt, ...spec.columns, ...(token ? [token] : [])].join(', ')})
        SELECT ${returned.join(', ')} FROM claimed ORDER BY ${dueAt}, ${keys}`;
  return {
    keyRecord,
    sameKey,
    claim,
    // An event's `remove`: the rows with the key, claimed or not.
    remove: `DELETE FROM ${table} t USING json_to_recordset($1::json) AS x(${keyRecord.join(', ')}) WHERE ${coveredKey}`,
    // Finishes: only rows still claimed by the lease end this process holds them by (`ours`), never a row another
    // claim took once this one's lease had run out.
    done: `DELETE FROM ${table} t USING json_to_recordset($1::json) AS x(${[...keyRecord, 'ours timestamptz'].join(', ')})
        WHERE ${sameKey} AND t.claimed_until = x.ours`,
    later: `UPDATE ${table} t SET ${dueAt} = x.due_again, claimed_until = NULL${resets}
        FROM json_to_recordset($1::json) AS x(${[...keyRecord, 'ours timestamptz', 'due_again timestamptz'].join(', ')})
        WHERE ${sameKey} AND t.claimed_until = x.ours`,
  };
}

/** A `where` clause for `row`, its time being `now` (a parameter, or `now()`). */
export function conditionOf(where: string, row: string, now: string): string {
  return where.replaceAll('$row', row).replaceAll('$now', now);
}

/** A claim's parameters (dueStatements), `held` the rows this process holds per group. */
export function claimParameters(
  spec: DueTable,
  o: { now: Date; until: Date; limit: number; held: Map<string, number> },
): unknown[] {
  const parameters: unknown[] = [o.now, o.until, o.limit];
  if (spec.token) parameters.push(randomUUID());
  if (spec.groups) parameters.push(spec.groups.perGroup, [...o.held.keys()], [...o.held.values()]);
  return parameters;
}

/** How many rows wait in the table (`dueBy`: only those due by then): a queue's depth, for /metrics. */
export async function queueDepth(db: Queryable, spec: DueTable, dueBy?: Date): Promise<number> {
  const [table, dueAt] = plainNames([spec.table, spec.dueAt]);
  const where = [
    ...(dueBy ? [`${dueAt} <= $1`] : []),
    ...(spec.where ? [conditionOf(spec.where, table, 'now()')] : []),
  ];
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${table}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}`,
    dueBy ? [dueBy] : [],
  );
  return rows[0].n;
}
