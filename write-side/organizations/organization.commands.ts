import { clientDetailsSubjects } from '../../domain/emails/email.events.ts';
import { organizationDecider } from '../../domain/organizations/organization.decider.ts';
import { organizationStream } from '../../domain/organizations/organization.events.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import { newId } from '../../platform/ids.ts';
import { forgetPersonalDataByPrefix } from '../../platform/personal-data.ts';
import type { Services } from '../../platform/services.ts';
import type { Plan } from '../../platform/tenancy.ts';
import { createApiKey } from '../api-keys/api-key.commands.ts';

/** Creates an organization with one live and one test key, both full_access. The keys are shown only now. */
export async function createOrganization(
  services: Pick<Services, 'store' | 'clock'>,
  input: { name: string; plan: Plan },
) {
  const orgId = newId('org', services.clock.now().getTime());
  const meta = { orgId, mode: 'live' as const, actor: 'cli' };
  await handleCommand(
    services.store,
    organizationStream(orgId),
    organizationDecider,
    {
      type: 'CreateOrganization',
      orgId,
      name: input.name,
      plan: input.plan,
      at: services.clock.now().toISOString(),
    },
    meta,
  );
  const keyInput = { name: 'Default', permission: 'full_access' as const, domainId: null };
  const live = await createApiKey(services, meta, keyInput);
  const test = await createApiKey(services, { ...meta, mode: 'test' }, keyInput);
  return { orgId, liveKey: live.key, testKey: test.key, position: test.position };
}

/**
 * Moves an organization to another plan (an operator's act, through the CLI). Resources beyond the new plan's
 * limits stay; new ones are refused until the organization is back within them.
 */
export async function changePlan(services: Pick<Services, 'store' | 'clock'>, orgId: string, plan: Plan) {
  const result = await handleCommand(
    services.store,
    organizationStream(orgId),
    organizationDecider,
    { type: 'ChangePlan', orgId, plan, at: services.clock.now().toISOString() },
    { orgId, mode: 'live', actor: 'cli' },
  );
  return { changed: result.events.length > 0, position: result.position };
}

/**
 * Turns the recording of openers' and clickers' IP address and user agent on or off for an organization (an
 * operator's act, through the CLI). `forget`: also erase what was recorded so far, by deleting the keys it was
 * sealed with; the events stay, and nobody can read those details any more.
 */
export async function setClientDetailsTracking(
  services: Pick<Services, 'store' | 'clock' | 'db'>,
  orgId: string,
  trackClientDetails: boolean,
  options: { forget?: boolean } = {},
) {
  const result = await handleCommand(
    services.store,
    organizationStream(orgId),
    organizationDecider,
    { type: 'ChangeSettings', orgId, trackClientDetails, at: services.clock.now().toISOString() },
    { orgId, mode: 'live', actor: 'cli' },
  );
  const forgotten = options.forget
    ? await forgetPersonalDataByPrefix(services.db, clientDetailsSubjects(orgId))
    : 0;
  return { changed: result.events.length > 0, forgotten, position: result.position };
}
