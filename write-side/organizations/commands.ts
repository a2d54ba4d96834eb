import { handleCommand } from '../../platform/eventstore/command.ts';
import type { Plan } from '../../platform/http/auth-context.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { createApiKey } from '../api-keys/commands.ts';
import { organizationDecider } from './decider.ts';
import { organizationStream } from './events.ts';

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
