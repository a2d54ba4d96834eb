import { z } from 'zod';
import { parseAddress } from '../../domain/emails/addresses.ts';
import { SuppressionAdded, suppressionJson } from '../../domain/suppressions/suppressions.response.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { commandRoutes } from '../../platform/http/command-routes.ts';
import { type ApiRouter, created } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { idShape } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { addSuppression, removeSuppression } from './suppression.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const SUPPRESSION_PROJECTIONS = ['suppressions'];

/**
 * Any address that sending accepts (domain/emails/addresses.ts), in the form sending records and checks: local
 * part as given, domain in ASCII (IDNs converted) and lower case. So an IDN address suppressed in either spelling
 * blocks sends to both.
 */
const address = z
  .string()
  .trim()
  .max(254, 'must be at most 254 characters')
  .transform((raw, ctx) => {
    const parsed = parseAddress(raw);
    if ('address' in parsed) return parsed.address;
    ctx.addIssue({ code: 'custom', message: parsed.error });
    return z.NEVER;
  });

const createBody = z
  .object({
    email: address,
    // hard_bounce and complaint are added by the suppression policy only.
    reason: z.literal('manual', { error: 'only `manual` may be supplied' }).default('manual'),
  })
  .strict();

export function suppressionCommandRoutes(api: ApiRouter, services: Services) {
  const suppressions = commandRoutes(api, services, {
    tag: 'Suppressions',
    name: 'Suppression',
    param: 'suppression_id',
    idPattern: idShape('sup'),
    projections: SUPPRESSION_PROJECTIONS,
  });

  api.post(
    '/suppressions',
    async (req) => {
      const body = parse(createBody, req.body);
      const result = await addSuppression(services, metaOf(req.auth), {
        email: body.email,
        reason: body.reason,
      });
      await services.readYourWrites.waitFor(SUPPRESSION_PROJECTIONS, result.position);
      const s = result.suppression;
      // 201 either way (the address is suppressed once this answers); `created` says whether this request did it.
      return created({
        ...suppressionJson({
          id: s.suppressionId,
          email: s.email,
          reason: s.reason,
          source_email_id: s.sourceEmailId,
          created_at: s.createdAt,
        }),
        created: result.created,
      });
    },
    {
      schema: {
        tag: 'Suppressions',
        summary: 'Suppress an address',
        description:
          '201 with the suppression: `created` is true for a new one, false when the address was suppressed already (the existing record, whatever its reason).',
        body: createBody,
        responses: { 201: SuppressionAdded },
      },
    },
  );

  suppressions.delete(
    '/suppressions/:suppression_id',
    { summary: 'Remove a suppression' },
    removeSuppression,
  );
}
