import { generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { createResolver } from '../../platform/dns.ts';
import { notFound } from '../../platform/errors.ts';
import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import type { Plan } from '../../platform/http/auth-context.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import {
  freeSlot,
  type PlanSlotKind,
  SLOT_ABANDONED_AFTER_MS,
  withPlanSlot,
} from '../plan-slots/commands.ts';
import { type DomainCommand, domainDecider } from './decider.ts';
import { checkDnsRecords } from './dns-check.ts';
import { dnsRecordsFor, dnsSettings, TRACKING_LABEL } from './dns-records.ts';
import { domainNameDecider } from './domain-name.decider.ts';
import {
  type DkimKey,
  DOMAIN_GRACE_PERIOD_MS,
  domainNameStream,
  domainStream,
  type Impressum,
} from './events.ts';

const generateRsaKeyPair = promisify(generateKeyPair);

export const DOMAIN_LIMITS: Record<Plan, number> = { free: 1, pro: 10, business: Number.POSITIVE_INFINITY };

/** Domains count against the plan until deleted (soft delete frees the slot, as the list stops showing it). */
export const DOMAIN_SLOTS: PlanSlotKind = {
  resource: 'domains',
  streamOf: domainStream,
  releasedBy: ['DomainDeleted', 'DomainPurged'],
};

type Deps = Pick<Services, 'store' | 'clock' | 'config' | 'secrets' | 'db'>;

/**
 * A fresh RSA 2048 key. The selector carries the month and a random part: it names this key in DNS, so a
 * rotated key gets a new selector and both can be published while mail signed with the old one is in flight.
 * Two organizations registering the same name get different selectors, so their records do not collide.
 */
async function newDkimKey(services: Deps, at: Date): Promise<DkimKey> {
  const { publicKey, privateKey } = await generateRsaKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const month = at.toISOString().slice(0, 7).replace('-', '');
  return {
    selector: `pl${month}${randomBytes(3).toString('hex')}`,
    publicKey: publicKey.toString('base64'),
    sealedPrivateKey: services.secrets.seal(privateKey),
    createdAt: at.toISOString(),
  };
}

/**
 * Registers the name in its claim stream; registrations whose domain was never written (a crash) are freed.
 * Only old ones: a young one may belong to a request still running, which would otherwise lose its name.
 */
async function registerName(services: Deps, meta: EventMetadata, name: string, domainId: string, at: string) {
  const stream = domainNameStream(name);
  const history = await services.store.readStream(stream);
  const state = rebuildState(domainNameDecider, history);
  const abandoned: string[] = [];
  for (const [id, r] of Object.entries(state.registrations)) {
    if (
      r.orgId === meta.orgId &&
      r.mode === meta.mode &&
      Date.parse(at) - Date.parse(r.since) > SLOT_ABANDONED_AFTER_MS &&
      (await services.store.readStream(domainStream(id))).length === 0
    )
      abandoned.push(id);
  }
  await handleCommand(
    services.store,
    stream,
    domainNameDecider,
    { type: 'RegisterDomainName', name, domainId, orgId: meta.orgId, mode: meta.mode, abandoned, at },
    meta,
    { history },
  );
}

export interface NewDomain {
  name: string;
  openTracking: boolean;
  clickTracking: boolean;
  inboundEnabled: boolean;
}

/** The plan limit is a slot taken before anything is written (plan-slots): racing adds cannot overshoot it. */
export async function addDomain(services: Deps, meta: EventMetadata, plan: Plan, input: NewDomain) {
  const limit = DOMAIN_LIMITS[plan];
  const now = services.clock.now();
  const at = now.toISOString();
  const domainId = newId('dom', now.getTime());
  const refusal =
    `The ${plan} plan includes ${limit} domain${limit === 1 ? '' : 's'}; ` +
    'delete one or upgrade the plan.';
  return withPlanSlot(services, meta, DOMAIN_SLOTS, { id: domainId, limit, refusal }, async () => {
    // The name first: a taken name is refused before the key pair costs its CPU time.
    await registerName(services, meta, input.name, domainId, at);
    const dkim = await newDkimKey(services, now);
    const settings = dnsSettings(services.config);
    const result = await handleCommand(
      services.store,
      domainStream(domainId),
      domainDecider,
      {
        type: 'AddDomain',
        domainId,
        orgId: meta.orgId,
        mode: meta.mode,
        ...input,
        dkim,
        returnPathDomain: `${settings.returnPathSubdomain}.${input.name}`,
        trackingDomain: `${TRACKING_LABEL}.${input.name}`,
        records: dnsRecordsFor(
          {
            name: input.name,
            selector: dkim.selector,
            publicKey: dkim.publicKey,
            inboundEnabled: input.inboundEnabled,
          },
          settings,
        ),
        at,
      },
      meta,
    );
    return { domainId, position: result.position };
  });
}

/**
 * Looks the domain's records up over DNS now and records the outcome. Becoming verified first claims the name
 * (409 when another organization holds it). Used by `POST /domains/{id}/verify` and the periodic re-check.
 */
export async function verifyDomain(
  services: Deps,
  meta: EventMetadata,
  domainId: string,
  trigger: 'manual' | 'periodic',
) {
  const stream = domainStream(domainId);
  const history = await services.store.readStream(stream);
  const state = rebuildState(domainDecider, history);
  if (!state.exists || state.deleted || state.orgId !== meta.orgId || state.mode !== meta.mode)
    throw notFound('Domain', domainId);
  const checks = await checkDnsRecords(createResolver(services.config.DNS_SERVERS), state.records);
  const command: DomainCommand = {
    type: 'RecordDnsCheck',
    domainId,
    orgId: meta.orgId,
    mode: meta.mode,
    trigger,
    checks,
    at: services.clock.now().toISOString(),
  };
  const outcome = domainDecider.decide(command, state);
  if (outcome.some((e) => e.type === 'DomainVerificationChecked' && e.data.status === 'verified')) {
    await handleCommand(
      services.store,
      domainNameStream(state.name),
      domainNameDecider,
      {
        type: 'ClaimDomainName',
        name: state.name,
        domainId,
        orgId: meta.orgId,
        mode: meta.mode,
        at: command.at,
      },
      meta,
    );
  }
  const result = await handleCommand(services.store, stream, domainDecider, command, meta, { history });
  return { position: result.position, events: result.events };
}

export interface DomainPatch {
  openTracking?: boolean;
  clickTracking?: boolean;
  inboundEnabled?: boolean;
  impressum?: Impressum | null;
}

export async function updateDomain(
  services: Deps,
  meta: EventMetadata,
  domainId: string,
  patch: DomainPatch,
) {
  const result = await handleCommand(
    services.store,
    domainStream(domainId),
    domainDecider,
    {
      type: 'UpdateDomain',
      domainId,
      orgId: meta.orgId,
      mode: meta.mode,
      ...patch,
      inboundMxHost: services.config.POSTLINE_MX_HOST,
      at: services.clock.now().toISOString(),
    },
    meta,
  );
  return { position: result.position };
}

/**
 * Soft delete: the domain stops sending, leaves lists and frees its plan slot now; retention purges it after the
 * grace period (the name stays registered until then).
 */
export async function deleteDomain(services: Deps, meta: EventMetadata, domainId: string) {
  const now = services.clock.now();
  const result = await handleCommand(
    services.store,
    domainStream(domainId),
    domainDecider,
    {
      type: 'DeleteDomain',
      domainId,
      orgId: meta.orgId,
      mode: meta.mode,
      at: now.toISOString(),
      purgeAfter: new Date(now.getTime() + DOMAIN_GRACE_PERIOD_MS).toISOString(),
    },
    meta,
  );
  await freeSlot(services, meta, DOMAIN_SLOTS, domainId);
  return { position: result.position };
}

/** Frees the name first, then purges: a crash in between leaves a domain that the next run purges. */
export async function purgeDomain(services: Deps, meta: EventMetadata, domain: { id: string; name: string }) {
  const at = services.clock.now().toISOString();
  await handleCommand(
    services.store,
    domainNameStream(domain.name),
    domainNameDecider,
    { type: 'ReleaseDomainName', name: domain.name, domainId: domain.id, at },
    meta,
  );
  const result = await handleCommand(
    services.store,
    domainStream(domain.id),
    domainDecider,
    { type: 'PurgeDomain', domainId: domain.id, at },
    meta,
  );
  return { position: result.position };
}
