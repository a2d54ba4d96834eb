import { z } from 'zod';
import { domainStream } from '../../domain/domains/domain.events.ts';
import { normalizeDomainName } from '../../domain/domains/domain-name.ts';
import { Domain } from '../../domain/domains/domains.response.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { AppError } from '../../platform/errors.ts';
import { commandRoutes } from '../../platform/http/command-routes.ts';
import {
  CONTROL_CHARACTERS_REFUSED,
  hasNoControlCharacter,
  resourceName,
} from '../../platform/http/route-schema.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { idShape } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import {
  addDomain,
  addEd25519Dkim,
  deleteDomain,
  restoreDomain,
  rotateDkim,
  updateDomain,
  verifyDomain,
} from './domain.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const DOMAIN_PROJECTIONS = ['domains'];

const flag = z.boolean();

const createBody = z
  .object({
    name: z.string().max(300, 'is too long'),
    // Resend's region in the EU, `eu-west-1` (Ireland), is the EU too.
    region: z
      .string()
      .default('eu')
      .refine(
        (r) => r === 'eu' || r === 'eu-west-1',
        'must be `eu`: Postline stores and processes all data in the EU only',
      )
      .transform(() => 'eu'),
    open_tracking: flag.default(false),
    click_tracking: flag.default(false),
    inbound_enabled: flag.default(false),
  })
  .strict();

/** `simulate`: test mode only, the outcome every record gets without a DNS look-up. */
const verifyBody = z
  .object({
    simulate: z.enum(['verified', 'failed'], { error: 'must be `verified` or `failed`' }).optional(),
  })
  .strict();

/** An optional field printed as one line of the footer: a line break or other control character would break it. */
const optionalLine = (max: number) =>
  z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .refine(hasNoControlCharacter, CONTROL_CHARACTERS_REFUSED)
    .meta({ description: `1 to ${max} characters, one line: no control characters (line breaks, tabs, …).` })
    .optional();

/** The legal notice printed in broadcast footers (German "Impressum", §5 DDG): who sends, and how to reach them. */
export const impressumSchema = z
  .object({
    company_name: resourceName(200),
    address: z.string().trim().min(1, 'is required').max(500, 'must be at most 500 characters'),
    country: z
      .string()
      .regex(/^[A-Za-z]{2}$/, 'must be an ISO 3166-1 alpha-2 country code, e.g. DE')
      .transform((c) => c.toUpperCase()),
    email: z.email({ error: 'must be an email address' }),
    phone: z
      .string()
      .regex(/^\+?[0-9][0-9 ()/-]{4,30}$/, 'must be a phone number, e.g. +49 30 1234567')
      .optional(),
    representative: optionalLine(200),
    register_entry: optionalLine(200),
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

export function domainCommandRoutes(api: ApiRouter, services: Services) {
  const domains = commandRoutes(api, services, {
    tag: 'Domains',
    name: 'Domain',
    param: 'domain_id',
    idPattern: idShape('dom'),
    projections: DOMAIN_PROJECTIONS,
    read: (tenant, id) => services.lookUps.findApiDomain(services.db, tenant, id),
    response: Domain,
    idempotent: { idPrefix: 'dom', stream: domainStream },
  });

  domains.create(
    '/domains',
    {
      summary: 'Add a sending domain',
      description: 'Answers with the DNS records to publish; the domain verifies by itself once they appear.',
      body: createBody,
      errors: ['domain_exists', 'plan_limit_exceeded', 'conflict'],
    },
    async (req) => {
      const body = parse(createBody, req.body);
      const normalized = normalizeDomainName(body.name);
      if ('error' in normalized) throw new AppError('validation_error', `\`name\`: ${normalized.error}`);
      const { domainId: id, position } = await addDomain(
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
      return { id, position };
    },
  );

  domains.change(
    'POST',
    '/domains/:domain_id/verify',
    {
      summary: 'Check the DNS records of a domain now',
      description:
        'Looks every record up over DNS. With a test key, `simulate` records that outcome for every record ' +
        'instead, without DNS (the events say `simulated`); a live key gets 403 `test_mode_only`.',
      body: verifyBody,
      bodyOptional: true,
      errors: ['domain_exists', 'conflict', 'test_mode_only'],
    },
    (req, id) => {
      const body = parse(verifyBody, req.body);
      return verifyDomain(services, metaOf(req.auth), id, 'manual', body.simulate);
    },
  );

  domains.change(
    'POST',
    '/domains/:domain_id/dkim/rotate',
    {
      summary: 'Rotate the DKIM key of a domain',
      description:
        'Creates a new key under a new selector and lists its record (`rotation: pending`). The old key signs ' +
        'until the new record verifies; then the new key signs and the old record stays listed (`retiring`) ' +
        'for DKIM_RETIRE_AFTER_MS before it is flagged `removable`. 409 while a new key is still pending.',
      errors: ['conflict'],
    },
    (req, id) => rotateDkim(services, metaOf(req.auth), id),
  );

  domains.change(
    'POST',
    '/domains/:domain_id/dkim/ed25519',
    {
      summary: 'Add an Ed25519 DKIM key beside RSA',
      description:
        'Creates an Ed25519 key (RFC 8463) under a selector of its own and lists its record (`rotation: pending`, ' +
        'not required). Once the record verifies, mail carries two signatures: RSA and Ed25519. 409 when the ' +
        'domain has an Ed25519 key already.',
      errors: ['conflict'],
    },
    (req, id) => addEd25519Dkim(services, metaOf(req.auth), id),
  );

  domains.change(
    'PATCH',
    '/domains/:domain_id',
    {
      summary: 'Change tracking, inbound mail or the impressum of a domain',
      body: patchBody,
      errors: ['conflict'],
    },
    (req, id) => {
      const body = parse(patchBody, req.body);
      return updateDomain(services, metaOf(req.auth), id, {
        openTracking: body.open_tracking,
        clickTracking: body.click_tracking,
        inboundEnabled: body.inbound_enabled,
        impressum: body.impressum,
      });
    },
  );

  domains.change(
    'POST',
    '/domains/:domain_id/restore',
    { summary: 'Restore a deleted domain', errors: ['domain_exists', 'plan_limit_exceeded', 'conflict'] },
    (req, id) => restoreDomain(services, metaOf(req.auth), req.auth.plan, id),
  );

  domains.delete('/domains/:domain_id', { summary: 'Delete a domain', errors: ['conflict'] }, deleteDomain);
}
