import { z } from 'zod';
import { resourceName } from '../../platform/http/route-schema.ts';
import { findApiKeyById } from '../../read-side/api-keys/api-keys.queries.ts';
import { createApiKey, deleteApiKey } from '../../write-side/api-keys/api-key.commands.ts';
import { type Cli, CommandFailed, KEYS_NOT_YET_IN_USE, parseOptions, positionalsOf } from './cli.ts';

/** A new API key for an organization (one that has none left, too). */
export async function keysCreate(
  { services, write, parse, knownOrganization, keysInUse }: Cli,
  rest: string[],
): Promise<number> {
  const usage =
    'keys create needs --org <org_id>, and takes --mode live|test, --permission full_access|sending_access, --name, --json';
  const { values } = parseOptions(
    {
      args: rest,
      options: {
        org: { type: 'string' },
        mode: { type: 'string', default: 'live' },
        permission: { type: 'string', default: 'full_access' },
        name: { type: 'string', default: 'CLI' },
        json: { type: 'boolean', default: false },
      },
      strict: true,
    },
    usage,
  );
  const { org, mode, permission, name } = parse(
    z.object({
      org: z.string().min(1),
      mode: z.enum(['live', 'test']),
      permission: z.enum(['full_access', 'sending_access']),
      // The API's limit for a key's name (POST /v1/api-keys).
      name: resourceName(100),
    }),
    values,
    usage,
  );
  await knownOrganization(org);
  const key = await createApiKey(
    services,
    { orgId: org, mode, actor: 'cli' },
    { name, permission, domainId: null },
  );
  const inUse = await keysInUse(key.position);
  if (values.json) write(JSON.stringify({ key_id: key.keyId, key: key.key, mode, permission }));
  else {
    write(`API key ${key.keyId} created for ${org} (${mode}, ${permission}): ${key.key}`);
    write('Store the key now: it is not shown again.');
    if (!inUse) write(KEYS_NOT_YET_IN_USE);
  }
  return 0;
}

/** Deletes an API key: refused at once in every process. */
export async function keysRevoke({ services, write }: Cli, rest: string[]): Promise<number> {
  const [keyId] = positionalsOf(rest, 1, 1, 'keys revoke needs <key_id>');
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
