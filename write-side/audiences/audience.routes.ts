import { z } from 'zod';
import { notFound } from '../../platform/errors.ts';
import { metaOf } from '../../platform/http/auth-context.ts';
import { Deleted } from '../../platform/http/route-schema.ts';
import { type ApiRouter, created, ok } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import type { Services } from '../../platform/services.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { findAudience } from '../../read-side/audiences/audiences.queries.ts';
import { AUDIENCE_PATHS, Audience, aliased } from '../../read-side/audiences/audiences.response.ts';
import { createAudience, deleteAudience, renameAudience } from './audience.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const AUDIENCE_PROJECTIONS = ['audiences'];

const AUDIENCE_ID = /^aud_[0-9a-z]{1,60}$/;

const body = z
  .object({ name: z.string().trim().min(1, 'is required').max(100, 'must be at most 100 characters') })
  .strict();

export function audienceCommandRoutes(api: ApiRouter, services: Services) {
  const answer = async (tenant: Tenant, audienceId: string, position?: string) => {
    await services.readYourWrites.waitFor(AUDIENCE_PROJECTIONS, position);
    const audience = await findAudience(services.db, tenant, audienceId);
    if (!audience) throw notFound('Audience', audienceId);
    return audience;
  };
  const known = (id: string) => {
    if (!AUDIENCE_ID.test(id)) throw notFound('Audience', id);
    return id;
  };

  for (const base of AUDIENCE_PATHS) {
    api.post(
      base,
      async (req) => {
        const { name } = parse(body, req.body);
        const { audienceId, position } = await createAudience(services, metaOf(req.auth), name);
        return created(await answer(req.auth, audienceId, position));
      },
      {
        schema: {
          tag: 'Audiences',
          summary: aliased(base, 'Create an audience'),
          body,
          responses: { 201: Audience },
          errors: ['conflict'],
        },
      },
    );

    api.patch(
      `${base}/:audience_id`,
      async (req) => {
        const id = known(req.params.audience_id);
        const { name } = parse(body, req.body);
        const { position } = await renameAudience(services, metaOf(req.auth), id, name);
        return ok(await answer(req.auth, id, position));
      },
      {
        schema: {
          tag: 'Audiences',
          summary: aliased(base, 'Rename an audience'),
          body,
          responses: { 200: Audience },
          errors: ['conflict'],
        },
      },
    );

    api.delete(
      `${base}/:audience_id`,
      async (req) => {
        const id = known(req.params.audience_id);
        const { position } = await deleteAudience(services, metaOf(req.auth), id);
        await services.readYourWrites.waitFor(AUDIENCE_PROJECTIONS, position);
        return ok({ id, deleted: true });
      },
      {
        schema: {
          tag: 'Audiences',
          summary: aliased(base, 'Delete an audience'),
          responses: { 200: Deleted },
          errors: ['conflict'],
        },
      },
    );
  }
}
