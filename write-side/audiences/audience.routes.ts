import { z } from 'zod';
import { AUDIENCE_PATHS, Audience, aliased } from '../../domain/audiences/audiences.response.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { type CommandResource, commandRoutes } from '../../platform/http/command-routes.ts';
import { resourceName } from '../../platform/http/route-schema.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { idShape } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { createAudience, deleteAudience, renameAudience } from './audience.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const AUDIENCE_PROJECTIONS = ['audiences'];
/** A deletion also leaves its contacts' `audience_ids`. */
const DELETED_AUDIENCE_PROJECTIONS = [...AUDIENCE_PROJECTIONS, 'contacts'];

const body = z.object({ name: resourceName(100) }).strict();

export function audienceCommandRoutes(api: ApiRouter, services: Services) {
  const resource: CommandResource = {
    tag: 'Audiences',
    name: 'Audience',
    param: 'audience_id',
    idPattern: idShape('aud'),
    projections: AUDIENCE_PROJECTIONS,
    read: (tenant, id) => services.lookUps.findAudience(services.db, tenant, id),
    response: Audience,
  };
  const audiences = commandRoutes(api, services, resource);
  const deletions = commandRoutes(api, services, { ...resource, projections: DELETED_AUDIENCE_PROJECTIONS });

  for (const base of AUDIENCE_PATHS) {
    audiences.create(
      base,
      { summary: aliased(base, 'Create an audience'), body, errors: ['conflict'] },
      async (req) => {
        const { audienceId: id, position } = await createAudience(
          services,
          metaOf(req.auth),
          parse(body, req.body).name,
        );
        return { id, position };
      },
    );
    audiences.change(
      'PATCH',
      `${base}/:audience_id`,
      { summary: aliased(base, 'Rename an audience'), body, errors: ['conflict'] },
      (req, id) => renameAudience(services, metaOf(req.auth), id, parse(body, req.body).name),
    );
    deletions.delete(
      `${base}/:audience_id`,
      { summary: aliased(base, 'Delete an audience'), errors: ['conflict'] },
      deleteAudience,
    );
  }
}
