import { findApiKeyById } from '../../read-side/api-keys/api-keys.queries.ts';
import { createApiKey, deleteApiKey } from '../../write-side/api-keys/api-key.commands.ts';
import type { ArgumentsOf } from './arguments.ts';
import { type Cli, CommandFailed, KEYS_NOT_YET_IN_USE } from './cli.ts';

/** A new API key for an organization (one that has none left, too). */
export async function keysCreate(
  { services, write, knownOrganization, keysInUse }: Cli,
  { org, mode, permission, name, json }: ArgumentsOf<'keys create'>,
): Promise<number> {
  await knownOrganization(org);
  const key = await createApiKey(
    services,
    { orgId: org, mode, actor: 'cli' },
    { name, permission, domainId: null },
  );
  const inUse = await keysInUse(key.position);
  if (json) write(JSON.stringify({ key_id: key.keyId, key: key.key, mode, permission }));
  else {
    write(`API key ${key.keyId} created for ${org} (${mode}, ${permission}): ${key.key}`);
    write('Store the key now: it is not shown again.');
    if (!inUse) write(KEYS_NOT_YET_IN_USE);
  }
  return 0;
}

/** Deletes an API key: refused at once in every process. */
export async function keysRevoke(
  { services, write }: Cli,
  { keyId }: ArgumentsOf<'keys revoke'>,
): Promise<number> {
  const found = await findApiKeyById(services.db, keyId);
  if (!found) throw new CommandFailed(`No API key ${keyId} in use.`);
  const { position } = await deleteApiKey(
    services,
    { orgId: found.org_id, mode: found.mode, actor: 'cli' },
    found.id,
  );
  await services.readYourWrites.waitFor(['api_keys'], position);
  write(`API key ${found.id} of ${found.org_id} (${found.mode}) revoked.`);
  return 0;
}
