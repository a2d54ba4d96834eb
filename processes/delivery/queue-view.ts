import type { QueueReplyRow, QueueRow } from '../../domain/queue/queue.response.ts';
import type { Queryable } from '../../platform/db/database.ts';
import type { Mode } from '../../platform/eventstore/types.ts';

/*
 * The queue as operators and organizations see it, read from this process's tables (delivery_jobs,
 * delivery_destinations, delivery_replies, shaping_groups) and the pauses' read model (delivery_pauses). The API's
 * read route gets these functions from the composition root; the CLI and /metrics call them.
 */

export interface QueueFilter {
  orgId?: string;
  mode?: Mode;
  destination?: string;
}

/**
 * SQL that is true while a pause in force at `now` (an SQL expression: a parameter or `now()`) holds the job
 * aliased `job`: its organization's pause of its destination or every organization's. The delivery claim skips such
 * jobs unless they are to be given up (`give_up`): a pause holds mail, never a bounce the operator asked for. The
 * subqueries do not name the job: the claim reads each once, not once per job.
 */
export const pausedJobSql = (job: string, now: string) =>
  `(${job}.destination IN (SELECT p.destination FROM delivery_pauses p WHERE p.org_id = '' AND p.until > ${now})
    OR (${job}.org_id, ${job}.destination) IN (SELECT p.org_id, p.destination FROM delivery_pauses p WHERE p.until > ${now}))`;

/**
 * SQL that is true while the shaping group of the job's destination is held at `now` (a back-off, or a pause a
 * reply rule set): the claim skips such jobs too, unless they are to be given up. Its subquery does not name the
 * job either, and its aliases are its own.
 */
export const shapingHeldJobSql = (job: string, now: string) =>
  `((${job}.org_id, ${job}.mode, ${job}.destination) IN (SELECT held_d.org_id, held_d.mode, held_d.destination
     FROM delivery_destinations held_d JOIN shaping_groups held_g ON held_g.grp = held_d.grp
     WHERE held_g.held_until > ${now}))`;

/**
 * A job's state at `now` (the queue view's rule, shared with /metrics), following the delivery claim's: `in_flight`
 * while a worker's claim runs; `held` while an operator's pause of its destination holds it (Postfix's hold
 * queue); `deferred` while it waits for its retry time or for its shaping group's hold to end; `queued` when a
 * worker may take it now. A job to be given up is claimed through a pause or a hold: `queued` once due.
 */
export const JOB_STATE = `CASE WHEN j.claimed_until > $1 THEN 'in_flight'
  WHEN NOT j.give_up AND ${pausedJobSql('j', '$1')} THEN 'held'
  WHEN j.due_at > $1 OR (NOT j.give_up AND ${shapingHeldJobSql('j', '$1')}) THEN 'deferred'
  ELSE 'queued' END`;

/**
 * What waits, per (organization, mode, destination, lane), largest first; with the pauses and the shaping hold in
 * force at `now` and the destination's last reply. Filters are exact (the destination normalized by the caller).
 */
export async function queueRows(db: Queryable, filter: QueueFilter, now: Date): Promise<QueueRow[]> {
  const { rows } = await db.query(
    `WITH jobs AS (
       SELECT j.org_id, j.mode, j.destination, j.lane, ${JOB_STATE} AS state, j.queued_at
       FROM delivery_jobs j
       WHERE ($2::text IS NULL OR j.org_id = $2) AND ($3::text IS NULL OR j.mode = $3)
         AND ($4::text IS NULL OR j.destination = $4)
     ), groups AS (
       SELECT org_id, mode, destination, lane,
         count(*) FILTER (WHERE state = 'queued')::int AS queued,
         count(*) FILTER (WHERE state = 'deferred')::int AS deferred,
         count(*) FILTER (WHERE state = 'held')::int AS held,
         count(*) FILTER (WHERE state = 'in_flight')::int AS in_flight,
         min(queued_at) AS oldest_queued_at
       FROM jobs GROUP BY org_id, mode, destination, lane
     )
     SELECT g.*, d.last_response, d.last_classification,
       GREATEST(
         (SELECT max(p.until) FROM delivery_pauses p
          WHERE p.destination = g.destination AND p.org_id IN (g.org_id, '') AND p.until > $1),
         (SELECT s.held_until FROM shaping_groups s WHERE s.grp = d.grp AND s.held_until > $1)
       ) AS paused_until
     FROM groups g
     LEFT JOIN delivery_destinations d
       ON d.org_id = g.org_id AND d.mode = g.mode AND d.destination = g.destination
     ORDER BY g.queued + g.deferred + g.held + g.in_flight DESC, g.destination, g.lane, g.org_id, g.mode`,
    [now, filter.orgId ?? null, filter.mode ?? null, filter.destination ?? null],
  );
  return rows as QueueRow[];
}

/** The pauses in force at `now`; `org_id` '' pauses every organization's mail. */
export async function livePauses(
  db: Queryable,
  filter: Pick<QueueFilter, 'orgId' | 'destination'>,
  now: Date,
): Promise<{ org_id: string; destination: string; until: Date; reason: string | null; paused_by: string }[]> {
  const { rows } = await db.query(
    `SELECT org_id, destination, until, reason, paused_by FROM delivery_pauses
     WHERE until > $1 AND ($2::text IS NULL OR org_id IN ($2, '')) AND ($3::text IS NULL OR destination = $3)
     ORDER BY destination, org_id`,
    [now, filter.orgId ?? null, filter.destination ?? null],
  );
  return rows;
}

/** How many replies of a destination the API gives: the newest. */
export const RECENT_REPLIES = 50;

/** A destination's replies of the last day to an organization's mail, newest first. */
export async function recentReplies(
  db: Queryable,
  target: { orgId: string; mode: Mode; destination: string },
  now: Date,
): Promise<QueueReplyRow[]> {
  const { rows } = await db.query(
    `SELECT at, smtp_code, response, classification FROM delivery_replies
     WHERE org_id = $1 AND mode = $2 AND destination = $3 AND at > $4::timestamptz - interval '1 day'
     ORDER BY at DESC LIMIT ${RECENT_REPLIES}`,
    [target.orgId, target.mode, target.destination, now],
  );
  return rows;
}

/**
 * How many destinations /metrics names; the rest are summed as `other`. Label cardinality: every label value is a
 * time series kept by Prometheus, and a sender reaches thousands of recipient domains; the 50 largest are the
 * ones worth a series of their own. `other` is never a destination (those have two labels at least).
 */
export const METRIC_DESTINATIONS = 50;

/**
 * Messages per (destination, lane, state) over every organization, for /metrics: the METRIC_DESTINATIONS
 * destinations with the most mail by name, the others summed under `other`.
 */
export async function queueMessageCounts(
  db: Queryable,
  now: Date,
): Promise<{ destination: string; lane: string; state: string; count: number }[]> {
  const { rows } = await db.query(
    `WITH counts AS (
       SELECT j.destination, j.lane, ${JOB_STATE} AS state, count(*)::int AS n
       FROM delivery_jobs j GROUP BY 1, 2, 3
     ), ranked AS (
       SELECT destination, dense_rank() OVER (ORDER BY total DESC, destination) AS rank
       FROM (SELECT destination, sum(n) AS total FROM counts GROUP BY destination) t
     )
     SELECT CASE WHEN r.rank <= ${METRIC_DESTINATIONS} THEN c.destination ELSE 'other' END AS destination,
       c.lane, c.state, sum(c.n)::int AS count
     FROM counts c JOIN ranked r USING (destination)
     GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    [now],
  );
  return rows;
}
