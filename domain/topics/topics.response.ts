import { z } from 'zod';
import { listOf, timestamp } from '../../platform/http/route-schema.ts';

export const Topic = z
  .strictObject({
    object: z.literal('topic'),
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    default_subscription: z.enum(['opt_in', 'opt_out']),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Topic' });

export const TopicList = listOf(Topic, 'TopicList');
