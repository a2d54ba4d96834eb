import { z } from 'zod';
import { timestamp } from '../../platform/http/route-schema.ts';

export const QueueDestination = z
  .strictObject({
    destination: z.string().meta({ description: 'The recipient domain, ASCII lower case.' }),
    lane: z.string().meta({ description: '`transactional` (API, SMTP relay) or `broadcast`.' }),
    queued: z.number().int().meta({ description: 'Messages due now, waiting for a worker.' }),
    deferred: z.number().int().meta({ description: 'Messages waiting for a retry or a back-off.' }),
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
