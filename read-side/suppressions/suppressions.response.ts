import { z } from 'zod';
import { listOf, timestamp } from '../../platform/http/route-schema.ts';

export const Suppression = z
  .strictObject({
    object: z.literal('suppression'),
    id: z.string(),
    email: z.string(),
    reason: z.enum(['hard_bounce', 'complaint', 'manual']),
    source_email_id: z.string().nullable(),
    created_at: timestamp,
  })
  .meta({
    id: 'Suppression',
    example: {
      object: 'suppression',
      id: 'sup_01jx0m4qk3f5b8c9d2e6g7h8j9',
      email: 'someone@example.com',
      reason: 'manual',
      source_email_id: null,
      created_at: '2026-01-15T09:30:00.000Z',
    },
  });

export const SuppressionList = listOf(Suppression, 'SuppressionList');
