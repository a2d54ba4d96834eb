import { z } from 'zod';
import { CreatedApiKey } from '../../domain/api-keys/api-keys.response.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { commandRoutes } from '../../platform/http/command-routes.ts';
import { resourceName } from '../../platform/http/route-schema.ts';
import { type ApiRouter, created, waitAfterCommit } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { idShape } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { createApiKey, deleteApiKey } from './api-key.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const API_KEY_PROJECTIONS = ['api_keys'];

const createBody = z
  .object({
    name: resourceName(100),
    permission: z.enum(['full_access', 'sending_access']).default('full_access'),
    domain_id: z.string().regex(idShape('dom'), 'must be a domain id (dom_…)').nullish(),
  })
  .strict();

export function apiKeyCommandRoutes(api: ApiRouter, services: Services, domainBelongsTo: DomainCheck) {
  const apiKeys = commandRoutes(api, services, {
    tag: 'API keys',
    name: 'API key',
    param: 'key_id',
    projections: API_KEY_PROJECTIONS,
  });

  api.post(
    '/api-keys',
    async (req) => {
      const body = parse(createBody, req.body);
      if (body.domain_id) await domainBelongsTo(req.auth, body.domain_id);
      const key = await createApiKey(services, metaOf(req.auth), {
        name: body.name,
        permission: body.permission,
        domainId: body.domain_id ?? null,
      });
      const answer = {
        id: key.keyId,
        name: body.name,
        key: key.key,
        permission: body.permission,
        domain_id: body.domain_id ?? null,
        created_at: key.createdAt,
      };
      // A 503 carries the key too: this answer is the only one that can show it, and the key is saved.
      await waitAfterCommit(services, API_KEY_PROJECTIONS, key.position, answer);
      return created(answer);
    },
    // Not idempotent on purpose: a replayed reply would have to keep the key, and only its hash may be stored.
    {
      schema: {
        tag: 'API keys',
        summary: 'Create an API key',
        description:
          'The answer holds the whole key, shown only this once. Not idempotent on purpose: a stored reply would keep the key.',
        body: createBody,
        responses: { 201: CreatedApiKey },
        errors: ['conflict'],
      },
    },
  );

  apiKeys.delete(
    '/api-keys/:key_id',
    {
      summary: 'Delete an API key',
      description: 'Refused at once in every process; a key may delete itself.',
      errors: ['conflict'],
    },
    deleteApiKey,
  );
}

/** Throws a 422 unless the domain exists in the caller's organization and mode (wired to the domains read model). */
export type DomainCheck = (
  auth: import('../../platform/auth/auth-context.ts').AuthContext,
  domainId: string,
) => Promise<void>;
