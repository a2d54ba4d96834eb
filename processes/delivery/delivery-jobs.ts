import {
  type EmailCanceled,
  type EmailContent,
  readyToSend,
  recipientsOf,
} from '../../domain/emails/email.events.ts';
import { isFinal, type RecipientStatus } from '../../domain/emails/status.ts';
import type { Queryable } from '../../platform/db/database.ts';
import type { DueChange } from '../../platform/due/due-queue.ts';
import type { DueTable } from '../../platform/due/due-sql.ts';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import { destinationsOf } from './look-times.ts';
import { pausedJobSql, shapingHeldJobSql } from './queue-view.ts';

/** How long a claimed job stays the claimant's without a renewal (renewed while its look goes on). */
export const DELIVERY_JOB_LEASE_MS = 30_000;

/** Mail of broadcasts travels in a lane of its own, behind nothing and ahead of nothing transactional. */
export type Lane = 'transactional' | 'broadcast';

/**
 * "Look at this email's recipients at this destination (their domain) at this time": the stream says who still
 * needs an attempt. `expedite`: the operator asked for a retry now (delayed recipients are due); `give_up`: the
 * operator gave the destination's queued mail up (its recipients bounce softly). Destination '' is a job of an
 * email released from its schedule: its look splits it into a job per destination.
 */
export type Job = {
  email_id: string;
  destination: string;
  org_id: string;
  mode: 'live';
  lane: Lane;
  queue: string;
  expedite: boolean;
  give_up: boolean;
};

/** The fairness group of a job: each organization's lanes are queues of their own, claimed in turn. */
export const queueOf = (orgId: string, lane: Lane) => `${orgId}:${lane}`;

/**
 * Jobs are claimed per queue (organization and lane), at most `perQueue` of one queue held by a process at once,
 * transactional ones first, and at most `broadcastHeld` broadcast jobs of every queue together, taken from each
 * in turn: broadcasts never fill every worker (50 a process), even where a slow server holds each of their jobs
 * for long, nor wait in front of a password reset. A job is not claimed while its destination is paused by the
 * operator (for its organization or for every one) or its shaping group is held (a pause from a reply rule, or a
 * back-off), unless it gives up. The subqueries of paused and held destinations do not name the job: each is read
 * once a claim and looked up per job (a hashed subplan), so that a claim's cost does not grow with the jobs it
 * passes over (queue-view.ts holds both, which the queue view's states follow). Their aliases are their own:
 * `$row` becomes the claim's alias for the job (`d`).
 */
export const deliveryJobs = (o = { perQueue: 40, broadcastHeld: 30 }): DueTable => ({
  table: 'delivery_jobs',
  key: { email_id: 'text', destination: 'text' },
  dueAt: 'due_at',
  columns: ['org_id', 'mode', 'lane', 'queue', 'expedite', 'give_up'],
  // Renewed while a look goes on: after a crash, the jobs it held are taken again within half a minute.
  leaseMs: DELIVERY_JOB_LEASE_MS,
  where: `($row.give_up OR (
      NOT ${pausedJobSql('$row', '$now')} AND NOT ${shapingHeldJobSql('$row', '$now')}))`,
  priority: `$row.lane = 'broadcast'`,
  finishResets: ['expedite'],
  groups: {
    column: 'queue',
    perGroup: o.perQueue,
    of: { table: 'delivery_queues', key: 'queue' },
    later: { group: `$group LIKE '%:broadcast'`, held: o.broadcastHeld },
  },
});

/** A new job's row: due at `dueAt`, in its organization's queue of its lane. */
export const jobRow = (
  j: Pick<Job, 'email_id' | 'destination' | 'org_id' | 'lane'> & { mode: string },
  dueAt: string,
): Record<string, unknown> => ({
  email_id: j.email_id,
  destination: j.destination,
  org_id: j.org_id,
  mode: j.mode,
  lane: j.lane,
  queue: queueOf(j.org_id, j.lane),
  due_at: dueAt,
});

/**
 * What an event of the log does to the jobs: a live email accepted is a job per destination, due at once; one
 * released by the scheduler is one job ('') that its look splits (the release does not name the recipients); one
 * canceled (a stopped broadcast withdraws deferred emails) has its jobs removed at every destination, so that the
 * queue shows no mail that will never be sent.
 */
export function jobChangesOf(event: StoredEvent): DueChange[] {
  if (event.metadata.mode !== 'live') return [];
  if (event.type === 'EmailCanceled')
    return [{ remove: { email_id: (event.data as EmailCanceled['data']).emailId } }];
  const ready = readyToSend(event);
  if (!ready) return [];
  const { orgId, mode } = event.metadata;
  const content = event.type === 'EmailQueued' ? (event.data as EmailContent) : undefined;
  const destinations = content ? destinationsOf(recipientsOf(content)) : [''];
  const lane: Lane = content?.broadcast ? 'broadcast' : 'transactional';
  return destinations.map((destination) => ({
    add: jobRow({ email_id: ready.emailId, destination, org_id: orgId, mode, lane }, ready.since),
  }));
}

/**
 * The jobs of an email released from its schedule (one job '' for every destination): one per destination of its
 * recipients still waiting, due at `dueAt`.
 */
export const splitJob = (
  job: Job,
  recipients: Record<string, { status: RecipientStatus }>,
  dueAt: string,
): Record<string, unknown>[] => {
  const waiting = Object.entries(recipients).filter(([, r]) => !isFinal(r.status));
  return destinationsOf(waiting.map(([address]) => address)).map((destination) =>
    jobRow({ ...job, destination }, dueAt),
  );
};

/** The queues of new jobs, listed for the claim's turns (`groups.of`). */
export async function listQueues(q: Queryable, jobs: Record<string, unknown>[]): Promise<void> {
  const queues = [...new Set(jobs.map((j) => j.queue as string))];
  if (queues.length > 0)
    await q.query('INSERT INTO delivery_queues (queue) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING', [
      queues,
    ]);
}
