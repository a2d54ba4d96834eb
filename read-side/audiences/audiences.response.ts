import { z } from 'zod';
import { listOf, timestamp } from '../../platform/http/route-schema.ts';

export const Audience = z
  .strictObject({
    object: z.literal('audience'),
    id: z.string(),
    name: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Audience' });

export const AudienceList = listOf(Audience, 'AudienceList');
