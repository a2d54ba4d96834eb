import { z } from 'zod';
import type { Queryable } from '../../platform/db/database.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import { timestamp } from '../../platform/http/route-schema.ts';

/** One destination's mail in one lane, for one organization and mode. */
export interface QueueRow {
  org_id: string;
  mode: Mode;
  destination: string;
  lane: string;
  queued: number;
  deferred: number;
  held: number;
  in_flight: number;
  oldest_queued_at: Date | null;
  /** The latest end of what holds it now: this organization's pause, every organization's, its shaping group's. */
  paused_until: Date | null;
  last_response: string | null;
  last_classification: string | null;
}

/** A destination's queue row as the API answers it (`QueueDestination`). */
export const queueRowJson = (r: QueueRow) => ({
  destination: r.destination,
  lane: r.lane,
  queued: r.queued,
  deferred: r.deferred,
  held: r.held,
  in_flight: r.in_flight,
  oldest_queued_at: r.oldest_queued_at && new Date(r.oldest_queued_at).toISOString(),
  paused_until: r.paused_until && new Date(r.paused_until).toISOString(),
  last_response: r.last_response,
  last_classification: r.last_classification,
});

/** A destination's replies to an organization's mail, newest first. */
export interface QueueReplyRow {
  at: Date;
  smtp_code: number | null;
  response: string | null;
  classification: string | null;
}

/** How the read routes read the queue (given by the composition root: the tables are the delivery process's). */
export interface QueueView {
  rows(
    db: Queryable,
    filter: { orgId: string; mode: Mode; destination?: string },
    now: Date,
  ): Promise<QueueRow[]>;
  replies(
    db: Queryable,
    target: { orgId: string; mode: Mode; destination: string },
    now: Date,
  ): Promise<QueueReplyRow[]>;
}

export const QueueDestination = z
  .strictObject({
    destination: z.string().meta({ description: 'The recipient domain, ASCII lower case.' }),
    lane: z.string().meta({ description: '`transactional` (API, SMTP relay) or `broadcast`.' }),
    queued: z.number().int().meta({ description: 'Messages due now, waiting for a worker.' }),
    deferred: z.number().int().meta({
      description:
        "Messages waiting for their retry time, or for the traffic shaping hold of the destination's provider to end.",
    }),
    held: z.number().int().meta({
      description:
        "Messages an operator's pause of the destination holds (this organization's or every one's), until `paused_until`.",
    }),
    in_flight: z.number().int().meta({ description: 'Messages a worker is delivering now.' }),
    oldest_queued_at: timestamp.nullable(),
    paused_until: timestamp.nullable().meta({
      description:
        "While delivery here is held: the latest end of an operator's pause (this organization's or every one's) and of the traffic shaping hold of the destination's provider.",
    }),
    last_response: z.string().nullable().meta({ description: "The destination's last SMTP reply." }),
    last_classification: z.string().nullable(),
  })
  .meta({
    id: 'QueueDestination',
    example: {
      destination: 'gmail.com',
      lane: 'transactional',
      queued: 3,
      deferred: 12,
      held: 0,
      in_flight: 1,
      oldest_queued_at: '2026-01-15T09:30:00.000Z',
      paused_until: null,
      last_response: '421 4.7.28 Our system has detected an unusual rate of unsolicited mail',
      last_classification: 'rate_limited',
    },
  });

export const QueueList = z
  .strictObject({ object: z.literal('list'), data: z.array(QueueDestination) })
  .meta({ id: 'QueueList', description: 'Every destination with mail waiting, most mail first; not paged.' });

export const QueueReply = z
  .strictObject({
    at: timestamp,
    smtp_code: z.number().int().nullable(),
    response: z.string().nullable(),
    classification: z.string().nullable(),
  })
  .meta({
    id: 'QueueReply',
    example: {
      at: '2026-01-15T09:31:00.000Z',
      smtp_code: 421,
      response: '421 4.7.28 Our system has detected an unusual rate of unsolicited mail',
      classification: 'rate_limited',
    },
  });

export const QueueReplyList = z
  .strictObject({ object: z.literal('list'), data: z.array(QueueReply) })
  .meta({ id: 'QueueReplyList', description: 'The newest 50 replies of the last day, newest first.' });
