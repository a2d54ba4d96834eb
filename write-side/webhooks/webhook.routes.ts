import { z } from 'zod';
import { endpointUrlProblem } from '../../domain/webhooks/endpoint-url.ts';
import { isSubscribable, PUBLIC_EVENT_TYPES } from '../../domain/webhooks/event-types.ts';
import { MAX_SIGNING_SECRETS, ROTATION_OVERLAP_MS } from '../../domain/webhooks/webhook.decider.ts';
import { WEBHOOK_ID } from '../../domain/webhooks/webhook.events.ts';
import {
  CreatedWebhook,
  DeliveryRetry,
  RotatedSecret,
  Webhook,
  WebhookReplay,
} from '../../domain/webhooks/webhooks.response.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { AppError, invalidField, notFound } from '../../platform/errors.ts';
import { commandRoutes } from '../../platform/http/command-routes.ts';
import { resendsName, zonedDateTime } from '../../platform/http/route-schema.ts';
import { type ApiRouter, created, ok } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import type { Services } from '../../platform/services.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import {
  addWebhook,
  deleteWebhook,
  requestDeliveryRetry,
  requestWebhookReplay,
  rotateWebhookSecret,
  updateWebhook,
} from './webhook.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const WEBHOOK_PROJECTIONS = ['webhooks'];

/** An endpoint url, trimmed; the rules are endpointUrlProblem's. */
const urlOf = (allowPrivateNetworks: boolean) =>
  z
    .string()
    .trim()
    .max(2048, 'must be at most 2048 characters')
    .superRefine((v, ctx) => {
      const problem = endpointUrlProblem(v, allowPrivateNetworks);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });

const events = z
  .array(
    z.string().refine(isSubscribable, {
      error: (issue) =>
        `unknown event type \`${String(issue.input)}\`; use one of ${PUBLIC_EVENT_TYPES.join(', ')}, \`email.*\` or \`*\``,
    }),
  )
  .min(1, 'must list at least one event type')
  .max(50, 'must list at most 50 event types')
  .transform((list) => [...new Set(list)]);

/** Resend's `status` for `active`, `enabled` or `disabled`; given with `active`, it is refused by its name. */
const status = z
  .enum(['enabled', 'disabled'], { error: 'must be `enabled` or `disabled`' })
  .optional()
  .meta({ description: 'Resend’s name for `active`: `enabled` or `disabled`' });
const withStatus = <B extends { active?: boolean; status?: 'enabled' | 'disabled' }>(body: B) => {
  if (body.active !== undefined && body.status !== undefined)
    throw invalidField('status', 'cannot be given with `active` (it is Resend’s name for it)');
  const { status: given, ...rest } = body;
  return given === undefined ? rest : { ...rest, active: given === 'enabled' };
};
// Resend's SDK names the url `endpoint` (`webhooks.create({ endpoint, events })`).
const endpoint = resendsName('endpoint', 'url');

const bodies = (allowPrivateNetworks: boolean) => {
  const url = urlOf(allowPrivateNetworks);
  return {
    createBody: z.preprocess(
      endpoint,
      z.object({ url, events, active: z.boolean().optional(), status }).strict(),
    ),
    updateBody: z.preprocess(
      endpoint,
      z
        .object({ url: url.optional(), events: events.optional(), active: z.boolean().optional(), status })
        .strict(),
    ),
  };
};
const OVERLAP_SECONDS = ROTATION_OVERLAP_MS / 1000;
const rotateBody = z
  .object({
    previous_secret_expires_in: z
      .int()
      .min(0, 'must be 0 or more seconds')
      .max(OVERLAP_SECONDS, `must be at most ${OVERLAP_SECONDS} seconds`)
      .optional()
      .meta({
        description: `Seconds from now until the replaced secrets stop signing: ${OVERLAP_SECONDS} (24 hours) by default, 0 to stop them at once (a secret that leaked).`,
      }),
  })
  .strict();
const replayBody = z.object({ since: zonedDateTime, until: zonedDateTime.nullish() }).strict();

export function webhookCommandRoutes(api: ApiRouter, services: Services) {
  const { createBody, updateBody } = bodies(services.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS);
  /** After a write the webhook is in the read model: its absence is a bug, not a 404. */
  const view = async (tenant: Tenant, id: string) => {
    const w = await services.lookUps.getWebhook(services.db, tenant, id);
    if (!w) throw new AppError('internal_error', `Webhook ${id} is missing from the read model`);
    return w;
  };
  // Unknown ids, malformed ids and other organizations' ids all answer the same 404.
  const webhooks = commandRoutes(api, services, {
    tag: 'Webhooks',
    name: 'Webhook',
    param: 'webhook_id',
    idPattern: WEBHOOK_ID,
    projections: WEBHOOK_PROJECTIONS,
    read: view,
    response: Webhook,
  });

  api.post(
    '/webhooks',
    async (req) => {
      const { active, ...body } = withStatus(parse(createBody, req.body));
      const {
        webhookId: id,
        secret,
        position,
      } = await addWebhook(services, metaOf(req.auth), req.auth.plan, { ...body, active: active ?? true });
      await services.readYourWrites.waitFor(WEBHOOK_PROJECTIONS, position);
      return created({ ...(await view(req.auth, id)), signing_secret: secret });
    },
    {
      schema: {
        tag: 'Webhooks',
        summary: 'Create a webhook',
        description: 'The answer holds the signing secret, shown only here and on rotation.',
        body: createBody,
        responses: { 201: CreatedWebhook },
        errors: ['plan_limit_exceeded', 'conflict'],
      },
    },
  );

  webhooks.change(
    'PATCH',
    '/webhooks/:webhook_id',
    { summary: 'Change a webhook', body: updateBody, errors: ['conflict'] },
    (req, id) => updateWebhook(services, metaOf(req.auth), id, withStatus(parse(updateBody, req.body))),
  );

  webhooks.delete(
    '/webhooks/:webhook_id',
    { summary: 'Delete a webhook', errors: ['conflict'] },
    deleteWebhook,
  );

  // `/signing-secret/rotate` is how Resend's SDK says it (`webhooks.rotateSigningSecret`): an alias.
  for (const path of ['/webhooks/:webhook_id/rotate-secret', '/webhooks/:webhook_id/signing-secret/rotate'])
    api.post(
      path,
      async (req) => {
        const id = await webhooks.id(req);
        const { previous_secret_expires_in: expiresIn } = parse(rotateBody, req.body);
        const overlapMs = expiresIn === undefined ? undefined : expiresIn * 1000;
        const rotated = await rotateWebhookSecret(services, metaOf(req.auth), id, overlapMs);
        await services.readYourWrites.waitFor(WEBHOOK_PROJECTIONS, rotated.position);
        return ok({
          id,
          signing_secret: rotated.secret,
          previous_secret_expires_at: rotated.previousValidUntil,
        });
      },
      {
        schema: {
          tag: 'Webhooks',
          summary: `Rotate the signing secret${path.includes('signing-secret') ? " (Resend's path)" : ''}`,
          description:
            'The previous secret keeps signing alongside until `previous_secret_expires_at` (24 hours, or ' +
            '`previous_secret_expires_in`); secrets replaced by earlier rotations keep signing until their own ' +
            `expiry and no longer, newest first, at most ${MAX_SIGNING_SECRETS} signatures in all.`,
          body: rotateBody,
          responses: { 200: RotatedSecret },
          errors: ['conflict'],
        },
      },
    );

  api.post(
    '/webhooks/:webhook_id/deliveries/:delivery_id/retry',
    async (req) => {
      const id = await webhooks.id(req);
      const deliveryId = req.params.delivery_id;
      if (!(await services.lookUps.getWebhook(services.db, req.auth, id))) throw notFound('Webhook', id);
      if (!(await services.lookUps.findDelivery(services.db, req.auth, id, deliveryId)))
        throw notFound('Webhook delivery', deliveryId);
      const { requestedAt } = await requestDeliveryRetry(services, metaOf(req.auth), id, deliveryId);
      return {
        status: 202,
        body: { id: deliveryId, object: 'webhook_delivery', webhook_id: id, retry_requested_at: requestedAt },
      };
    },
    {
      schema: {
        tag: 'Webhooks',
        summary: 'Send a delivery again',
        responses: { 202: DeliveryRetry },
        errors: ['webhook_inactive', 'conflict'],
      },
    },
  );

  api.post(
    '/webhooks/:webhook_id/replay',
    async (req) => {
      const id = await webhooks.id(req);
      const body = parse(replayBody, req.body);
      const since = new Date(body.since).toISOString();
      const until = body.until ? new Date(body.until).toISOString() : null;
      const { replayId, requestedAt } = await requestWebhookReplay(services, metaOf(req.auth), id, {
        since,
        until,
      });
      return {
        status: 202,
        body: {
          id: replayId,
          object: 'webhook_replay',
          webhook_id: id,
          since,
          until,
          requested_at: requestedAt,
        },
      };
    },
    {
      schema: {
        tag: 'Webhooks',
        summary: 'Deliver again the events of a time range',
        body: replayBody,
        responses: { 202: WebhookReplay },
        errors: ['webhook_inactive', 'conflict'],
      },
    },
  );
}
