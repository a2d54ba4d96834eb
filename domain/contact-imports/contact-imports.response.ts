import { z } from 'zod';
import { timestamp } from '../../platform/http/route-schema.ts';

const count = z.int().min(0);

export const ContactImport = z
  .strictObject({
    object: z.literal('contact_import'),
    id: z.string(),
    audience_id: z.string().nullable(),
    status: z.enum(['queued', 'running', 'completed', 'failed']),
    rows_total: count.nullable().meta({ description: 'Data rows in the file; null until they are counted.' }),
    rows_processed: count,
    rows_created: count,
    rows_updated: count,
    rows_skipped: count,
    invalid_rows: z
      .array(z.strictObject({ line: z.int().min(1), reason: z.string() }))
      .meta({ description: 'The first skipped rows, in line order, each with why it was skipped.' }),
    invalid_rows_truncated: z
      .boolean()
      .meta({ description: 'More rows were skipped than `invalid_rows` lists.' }),
    error: z
      .strictObject({ line: z.int().nullable(), message: z.string() })
      .nullable()
      .meta({ description: 'Why a failed import stopped.' }),
    created_at: timestamp,
    updated_at: timestamp,
    finished_at: timestamp.nullable(),
  })
  .meta({ id: 'ContactImport' });
