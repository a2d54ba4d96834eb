import { apiKeyDecider } from '../../domain/api-keys/api-key.decider.ts';
import { apiKeyStream } from '../../domain/api-keys/api-key.events.ts';
import { sha256Hex } from '../../platform/crypto.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import type { EventMetadata, Mode } from '../../platform/eventstore/types.ts';
import { newId, randomToken } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import type { Permission } from '../../platform/tenancy.ts';

export const KEY_PREFIX_LENGTH = 16;

/** A new secret: `pk_live_` or `pk_test_` and 40 base62 characters (about 238 bits). */
export const generateApiKey = (mode: Mode) => `pk_${mode}_${randomToken(40)}`;

export interface NewApiKey {
  name: string;
  permission: Permission;
  domainId: string | null;
}

export async function createApiKey(
  services: Pick<Services, 'store' | 'clock'>,
  meta: EventMetadata,
  input: NewApiKey,
) {
  const key = generateApiKey(meta.mode);
  const keyId = newId('key', services.clock.now().getTime());
  const at = services.clock.now().toISOString();
  const result = await handleCommand(
    services.store,
    apiKeyStream(keyId),
    apiKeyDecider,
    {
      type: 'CreateApiKey',
      keyId,
      orgId: meta.orgId,
      mode: meta.mode,
      ...input,
      keyHash: sha256Hex(key),
      keyPrefix: key.slice(0, KEY_PREFIX_LENGTH),
      at,
    },
    meta,
  );
  return { key, keyId, createdAt: at, position: result.position };
}

export async function deleteApiKey(
  services: Pick<Services, 'store' | 'clock'>,
  meta: EventMetadata,
  keyId: string,
) {
  const result = await handleCommand(
    services.store,
    apiKeyStream(keyId),
    apiKeyDecider,
    {
      type: 'DeleteApiKey',
      keyId,
      orgId: meta.orgId,
      mode: meta.mode,
      at: services.clock.now().toISOString(),
    },
    meta,
  );
  return { position: result.position };
}
