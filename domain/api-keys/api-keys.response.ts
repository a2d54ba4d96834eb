import { z } from 'zod';
import { listOf, timestamp } from '../../platform/http/route-schema.ts';

const permission = z.enum(['full_access', 'sending_access']);

/** A key as listed: never the key itself, only its first 16 characters. */
export const ApiKey = z
  .strictObject({
    object: z.literal('api_key'),
    id: z.string(),
    name: z.string(),
    key_prefix: z.string(),
    permission,
    domain_id: z.string().nullable(),
    mode: z.enum(['live', 'test']),
    created_at: timestamp,
  })
  .meta({ id: 'ApiKey' });

/** The answer to creating a key: the only time the whole `key` is shown. */
export const CreatedApiKey = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    key: z.string(),
    permission,
    domain_id: z.string().nullable(),
    created_at: timestamp,
  })
  .meta({
    id: 'CreatedApiKey',
    example: {
      id: 'key_01jx0m4qk3f5b8c9d2e6g7h8j9',
      name: 'Production',
      key: 'pk_live_3kq9…',
      permission: 'full_access',
      domain_id: null,
      created_at: '2026-01-15T09:30:00.000Z',
    },
  });

export const ApiKeyList = listOf(ApiKey, 'ApiKeyList');
