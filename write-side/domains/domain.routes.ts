import { z } from 'zod';
import { AppError, notFound } from '../../platform/errors.ts';
import { metaOf } from '../../platform/http/auth-context.ts';
import { Deleted } from '../../platform/http/route-schema.ts';
import {
  type ApiRequest,
  type ApiRouter,
  created,
  createdEarlier,
  ok,
  waitAfterCommit,
} from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { findDomainById, toApiDomain } from '../../read-side/domains/domains.queries.ts';
import { Domain } from '../../read-side/domains/domains.response.ts';
import { addDomain, deleteDomain, restoreDomain, updateDomain, verifyDomain } from './domain.commands.ts';
import { domainStream } from './domain.events.ts';
import { normalizeDomainName } from './domain-name.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const DOMAIN_PROJECTIONS = ['domains'];

const flag = z.boolean({ error: 'must be true or false' });

const createBody = z
  .object({
    name: z
      .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') })
      .max(300, 'is too long'),
    region: z
      .string({ error: 'must be a string' })
      .default('eu')
      .refine((r) => r === 'eu', 'must be `eu`: Postline stores and processes all data in the EU only'),
    open_tracking: flag.default(false),
    click_tracking: flag.default(false),
    inbound_enabled: flag.default(false),
  })
  .strict();

const optionalText = (max: number) =>
  z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`).optional();

/** The legal notice printed in broadcast footers (German "Impressum", §5 DDG): who sends, and how to reach them. */
export const impressumSchema = z
  .object({
    company_name: z
      .string({ error: 'is required' })
      .trim()
      .min(1, 'is required')
      .max(200, 'must be at most 200 characters'),
    address: z
      .string({ error: 'is required' })
      .trim()
      .min(1, 'is required')
      .max(500, 'must be at most 500 characters'),
    country: z
      .string({ error: 'is required' })
      .regex(/^[A-Za-z]{2}$/, 'must be an ISO 3166-1 alpha-2 country code, e.g. DE')
      .transform((c) => c.toUpperCase()),
    email: z.email({ error: 'must be an email address' }),
    phone: z
      .string()
      .regex(/^\+?[0-9][0-9 ()/-]{4,30}$/, 'must be a phone number, e.g. +49 30 1234567')
      .optional(),
    representative: optionalText(200),
    register_entry: optionalText(200),
    vat_id: z
      .string()
      .regex(/^[A-Z]{2}[0-9A-Z+*.]{2,13}$/, 'must be a VAT id with its country prefix, e.g. DE123456789')
      .optional(),
  })
  .strict();

const patchBody = z
  .object({
    open_tracking: flag.optional(),
    click_tracking: flag.optional(),
    inbound_enabled: flag.optional(),
    impressum: impressumSchema.nullable().optional(),
  })
  .strict();

const DOMAIN_ID = /^dom_[0-9a-z]{1,60}$/;

function domainIdOf(req: ApiRequest): string {
  const id = req.params.domain_id;
  if (!DOMAIN_ID.test(id)) throw notFound('Domain', id);
  return id;
}

export function domainCommandRoutes(api: ApiRouter, services: Services) {
  /** Answers with the domain as a GET would see it, once the read model has the change. */
  const current = async (req: ApiRequest, domainId: string, position: string | undefined) => {
    await waitAfterCommit(services, DOMAIN_PROJECTIONS, position, { id: domainId });
    const row = await findDomainById(services.db, req.auth, domainId);
    if (!row) throw notFound('Domain', domainId);
    return toApiDomain(row);
  };

  api.post(
    '/domains',
    async (req) => {
      const body = parse(createBody, req.body);
      const normalized = normalizeDomainName(body.name);
      if ('error' in normalized) throw new AppError('validation_error', `\`name\`: ${normalized.error}`);
      const earlier = await createdEarlier(services, req, domainStream);
      if (earlier) return created(await current(req, earlier.id, earlier.position));
      const { domainId, position } = await addDomain(
        services,
        metaOf(req.auth),
        req.auth.plan,
        {
          name: normalized.name,
          openTracking: body.open_tracking,
          clickTracking: body.click_tracking,
          inboundEnabled: body.inbound_enabled,
        },
        req.idempotency?.ids[0],
      );
      return created(await current(req, domainId, position));
    },
    {
      idempotent: { newIds: (_, at) => [newId('dom', at)] },
      schema: {
        tag: 'Domains',
        summary: 'Add a sending domain',
        description:
          'Answers with the DNS records to publish; the domain verifies by itself once they appear.',
        body: createBody,
        responses: { 201: Domain },
        errors: ['domain_exists', 'plan_limit_exceeded', 'conflict'],
      },
    },
  );

  api.post(
    '/domains/:domain_id/verify',
    async (req) => {
      const domainId = domainIdOf(req);
      const { position } = await verifyDomain(services, metaOf(req.auth), domainId, 'manual');
      return ok(await current(req, domainId, position));
    },
    {
      schema: {
        tag: 'Domains',
        summary: 'Check the DNS records of a domain now',
        responses: { 200: Domain },
        errors: ['domain_exists', 'conflict'],
      },
    },
  );

  api.patch(
    '/domains/:domain_id',
    async (req) => {
      const domainId = domainIdOf(req);
      const body = parse(patchBody, req.body);
      const { position } = await updateDomain(services, metaOf(req.auth), domainId, {
        openTracking: body.open_tracking,
        clickTracking: body.click_tracking,
        inboundEnabled: body.inbound_enabled,
        impressum: body.impressum,
      });
      return ok(await current(req, domainId, position));
    },
    {
      schema: {
        tag: 'Domains',
        summary: 'Change tracking, inbound mail or the impressum of a domain',
        body: patchBody,
        responses: { 200: Domain },
        errors: ['conflict'],
      },
    },
  );

  api.post(
    '/domains/:domain_id/restore',
    async (req) => {
      const domainId = domainIdOf(req);
      const { position } = await restoreDomain(services, metaOf(req.auth), req.auth.plan, domainId);
      return ok(await current(req, domainId, position));
    },
    {
      schema: {
        tag: 'Domains',
        summary: 'Restore a deleted domain',
        responses: { 200: Domain },
        errors: ['domain_exists', 'plan_limit_exceeded', 'conflict'],
      },
    },
  );

  api.delete(
    '/domains/:domain_id',
    async (req) => {
      const domainId = domainIdOf(req);
      const { position } = await deleteDomain(services, metaOf(req.auth), domainId);
      await services.readYourWrites.waitFor(DOMAIN_PROJECTIONS, position);
      return ok({ id: domainId, deleted: true });
    },
    {
      schema: {
        tag: 'Domains',
        summary: 'Delete a domain',
        responses: { 200: Deleted },
        errors: ['conflict'],
      },
    },
  );
}
