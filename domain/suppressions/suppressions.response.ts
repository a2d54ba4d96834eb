import { z } from 'zod';
import { listOf, timestamp } from '../../platform/http/route-schema.ts';

const fields = {
  object: z.literal('suppression'),
  id: z.string(),
  email: z.string(),
  reason: z.enum(['hard_bounce', 'complaint', 'manual']),
  source_email_id: z.string().nullable(),
  created_at: timestamp,
};
const example = {
  object: 'suppression',
  id: 'sup_01jx0m4qk3f5b8c9d2e6g7h8j9',
  email: 'someone@example.com',
  reason: 'manual',
  source_email_id: null,
  created_at: '2026-01-15T09:30:00.000Z',
};

/** A suppression as the API answers it (`Suppression`), from a read-model row or a command's record. */
export const suppressionJson = (r: {
  id: string;
  email: string;
  reason: 'hard_bounce' | 'complaint' | 'manual';
  source_email_id: string | null;
  created_at: Date | string;
}) => ({
  object: 'suppression' as const,
  id: r.id,
  email: r.email,
  reason: r.reason,
  source_email_id: r.source_email_id,
  created_at: new Date(r.created_at).toISOString(),
});

export const Suppression = z.strictObject(fields).meta({ id: 'Suppression', example });

/** What `POST /v1/suppressions` answers: the suppression, and whether this request created it. */
export const SuppressionAdded = z
  .strictObject({
    ...fields,
    created: z.boolean().meta({
      description:
        'true: this request suppressed the address; false: it was suppressed already, and this is its existing record.',
    }),
  })
  .meta({ id: 'SuppressionAdded', example: { ...example, created: true } });

export const SuppressionList = listOf(Suppression, 'SuppressionList');
