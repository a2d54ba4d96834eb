import { dkimRotationDue } from '../../domain/domains/dkim-rotation.ts';
import {
  type DomainCommand,
  type DomainState,
  domainDecider,
  type Simulation,
} from '../../domain/domains/domain.decider.ts';
import {
  DOMAIN_GRACE_PERIOD_MS,
  domainNameStream,
  domainStream,
  type Impressum,
} from '../../domain/domains/domain.events.ts';
import { domainNameDecider } from '../../domain/domains/domain-name.decider.ts';
import { PLANS } from '../../domain/organizations/plans.ts';
import { createResolver } from '../../platform/dns.ts';
import { visibleTo } from '../../platform/errors.ts';
import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import type { EventMetadata, Mode } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Plan } from '../../platform/tenancy.ts';
import { freeSlot, type PlanSlotKind, withPlanSlot } from '../plan-slots/plan-slot.commands.ts';
import { checkDnsRecords } from './dns-check.ts';
import {
  type Deps,
  type NewDomain,
  nameRegistration,
  newDkimKey,
  newDomainCommand,
  newEd25519Key,
} from './new-domain.ts';

/** Domains count against the plan until deleted (soft delete frees the slot, as the list stops showing it). */
export const DOMAIN_SLOTS: PlanSlotKind = {
  resource: 'domains',
  streamOf: domainStream,
  releasedBy: ['DomainDeleted', 'DomainPurged'],
  restoredBy: ['DomainRestored'],
};

/** The plan limit is a slot taken before anything is written (plan-slots): racing adds cannot overshoot it. */
export async function addDomain(
  services: Deps,
  meta: EventMetadata,
  plan: Plan,
  input: NewDomain,
  /** Chosen in advance under an Idempotency-Key; a new id by default. */
  chosenId?: string,
) {
  const limit = PLANS[plan].domains;
  const now = services.clock.now();
  const at = now.toISOString();
  const domainId = chosenId ?? newId('dom', now.getTime());
  const refusal =
    `The ${plan} plan includes ${limit} domain${limit === 1 ? '' : 's'}; ` +
    'delete one or upgrade the plan.';
  // A name the organization already has is a 409 on every plan, before the plan's limit is asked (the decider is
  // pure: this only reads).
  const registration = await nameRegistration(services, meta, input.name, domainId, at);
  domainNameDecider.decide(registration.command, registration.state);
  return withPlanSlot(services, meta, DOMAIN_SLOTS, { id: domainId, limit, refusal }, async () => {
    // The name first: a taken name is refused before the key pair costs its CPU time.
    const name = await nameRegistration(services, meta, input.name, domainId, at);
    await handleCommand(services.store, name.stream, domainNameDecider, name.command, meta, {
      history: name.history,
    });
    const add = await newDomainCommand(services, meta, { ...input, domainId, at: now });
    const result = await handleCommand(services.store, domainStream(domainId), domainDecider, add, meta);
    return { domainId, position: result.position };
  });
}

/**
 * Looks the domain's records up over DNS now and records the outcome. Becoming verified first claims the name
 * (409 when another organization holds it). Used by `POST /domains/{id}/verify` and the periodic re-check.
 * `simulate` (test mode only) records that outcome for every record without looking anything up; a simulated
 * domain's periodic re-check repeats its simulation, until a check without `simulate` goes back to DNS. A
 * simulation proves no control of the name, so it claims none.
 */
export async function verifyDomain(
  services: Deps,
  meta: EventMetadata,
  domainId: string,
  trigger: 'manual' | 'periodic',
  simulate?: Simulation,
) {
  const stream = domainStream(domainId);
  const history = await services.store.readStream(stream);
  const state = visibleTo(rebuildState(domainDecider, history), meta, 'Domain', domainId);
  const at = services.clock.now().toISOString();
  const command = await dnsCheck(
    services,
    { domainId, orgId: meta.orgId, mode: meta.mode, trigger },
    state,
    at,
    simulate,
  );
  const outcome = domainDecider.decide(command, state);
  const verified = outcome.some(
    (e) => e.type === 'DomainVerificationChecked' && e.data.status === 'verified',
  );
  if (verified && command.type === 'RecordDnsCheck') {
    await handleCommand(
      services.store,
      domainNameStream(state.name),
      domainNameDecider,
      { type: 'ClaimDomainName', name: state.name, domainId, orgId: meta.orgId, mode: meta.mode, at },
      meta,
    );
  }
  const result = await handleCommand(services.store, stream, domainDecider, command, meta, { history });
  return { position: result.position, events: result.events };
}

/** The check to record: the simulated outcome (given, or a simulated domain's periodic re-check), else DNS's. */
async function dnsCheck(
  services: Deps,
  target: { domainId: string; orgId: string; mode: Mode; trigger: 'manual' | 'periodic' },
  state: Extract<DomainState, { exists: true }>,
  at: string,
  simulate?: Simulation,
): Promise<DomainCommand> {
  const simulation = simulate ?? (target.trigger === 'periodic' ? state.simulation : null);
  if (simulation) return { type: 'SimulateDnsCheck', ...target, outcome: simulation, at };
  const checks = await checkDnsRecords(createResolver(services.config.DNS_SERVERS), state.records);
  return { type: 'RecordDnsCheck', ...target, checks, at };
}

/** Starts a DKIM key rotation: a new key under a new selector, listed `pending` until its record verifies. */
export async function rotateDkim(services: Deps, meta: EventMetadata, domainId: string) {
  return (await rotation(services, meta, domainId, 'manual')) ?? {};
}

/**
 * The automatic rotation (the domain verifier): started only when the signing key is older than
 * DKIM_ROTATE_AFTER_MS and none is pending; null otherwise, before a key pair costs its CPU time.
 */
export const rotateDkimIfDue = (services: Deps, meta: EventMetadata, domainId: string) =>
  rotation(services, meta, domainId, 'scheduled');

async function rotation(
  services: Deps,
  meta: EventMetadata,
  domainId: string,
  trigger: 'manual' | 'scheduled',
) {
  const stream = domainStream(domainId);
  const history = await services.store.readStream(stream);
  const state = rebuildState(domainDecider, history);
  const now = services.clock.now();
  const at = now.toISOString();
  const due = state.exists && dkimRotationDue(state.dkim, at, services.config.DKIM_ROTATE_AFTER_MS);
  if (trigger === 'scheduled' && !due) return null;
  const command: DomainCommand = {
    type: 'RotateDkim',
    domainId,
    orgId: meta.orgId,
    mode: meta.mode,
    trigger,
    dkim: await newDkimKey(services, now),
    graceMs: services.config.DKIM_RETIRE_AFTER_MS,
    at,
  };
  const result = await handleCommand(services.store, stream, domainDecider, command, meta, { history });
  return { position: result.position };
}

/** Adds an Ed25519 key to sign beside RSA once its record verifies (409 when the domain has one). */
export async function addEd25519Dkim(services: Deps, meta: EventMetadata, domainId: string) {
  const now = services.clock.now();
  const command: DomainCommand = {
    type: 'AddEd25519Dkim',
    domainId,
    orgId: meta.orgId,
    mode: meta.mode,
    dkim: await newEd25519Key(services, now),
    at: now.toISOString(),
  };
  const result = await handleCommand(services.store, domainStream(domainId), domainDecider, command, meta);
  return { position: result.position };
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

/**
 * Takes a deleted domain back within its grace period (its name is still its own): it counts against the plan
 * again, so a plan at its limit refuses it (422 plan_limit_exceeded).
 */
export async function restoreDomain(services: Deps, meta: EventMetadata, plan: Plan, domainId: string) {
  const limit = PLANS[plan].domains;
  const refusal =
    `The ${plan} plan includes ${limit} domain${limit === 1 ? '' : 's'}; ` +
    'delete one or upgrade the plan before restoring this one.';
  const command = {
    type: 'RestoreDomain' as const,
    domainId,
    orgId: meta.orgId,
    mode: meta.mode,
    at: services.clock.now().toISOString(),
  };
  // Not found, not deleted or too late is said before the plan's limit is asked (the decider is pure: this reads).
  const history = await services.store.readStream(domainStream(domainId));
  domainDecider.decide(command, rebuildState(domainDecider, history));
  return withPlanSlot(services, meta, DOMAIN_SLOTS, { id: domainId, limit, refusal }, async () => {
    const result = await handleCommand(services.store, domainStream(domainId), domainDecider, command, meta, {
      history,
    });
    return { position: result.position };
  });
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
