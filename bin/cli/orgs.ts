import { listOrganizations } from '../../read-side/api-keys/api-keys.queries.ts';
import { planJson } from '../../read-side/organizations/organizations.queries.ts';
import {
  changePlan,
  createOrganization,
  setClientDetailsTracking,
} from '../../write-side/organizations/organization.commands.ts';
import type { ArgumentsOf } from './arguments.ts';
import { type Cli, KEYS_NOT_YET_IN_USE } from './cli.ts';
import { plansTable, priceText } from './plan-text.ts';

/** Creates an organization and prints its live and test API keys, once. */
export async function orgsCreate(
  { services, write, keysInUse }: Cli,
  { json, ...input }: ArgumentsOf<'orgs create'>,
): Promise<number> {
  const org = await createOrganization(services, input);
  const inUse = await keysInUse(org.position);
  if (json) write(JSON.stringify({ org_id: org.orgId, live_key: org.liveKey, test_key: org.testKey }));
  else {
    write(`Organization ${input.name} created: ${org.orgId} (plan ${input.plan})`);
    write(`  live key: ${org.liveKey}`);
    write(`  test key: ${org.testKey}`);
    write('Store the keys now: they are not shown again.');
    if (!inUse) write(KEYS_NOT_YET_IN_USE);
  }
  return 0;
}

/** Every organization with its plan and keys in use per mode, then what each plan costs and includes. */
export async function orgsList(
  { services, write }: Cli,
  { json }: ArgumentsOf<'orgs list'>,
): Promise<number> {
  const rows = await listOrganizations(services.db);
  for (const o of rows) {
    const created = new Date(o.created_at).toISOString();
    const plan = planJson(o.plan);
    if (json)
      write(
        JSON.stringify({
          org_id: o.id,
          name: o.name,
          plan: o.plan,
          plan_price: plan.price,
          plan_limits: plan.limits,
          plan_overage: plan.overage,
          created_at: created,
          track_client_details: o.track_client_details,
          live_keys: o.live_keys,
          test_keys: o.test_keys,
        }),
      );
    else {
      const details = o.track_client_details ? '  client details on' : '';
      write(
        `${o.id}  ${o.plan.padEnd(8)}  ${priceText(o.plan).padEnd(9)}  keys live ${o.live_keys}, test ${o.test_keys}${details}  ${o.name}`,
      );
    }
  }
  if (json) return 0;
  if (rows.length === 0) write('No organizations yet: npx postline orgs create --name <name>');
  write(['', ...plansTable()].join('\n'));
  return 0;
}

/** Moves an organization to another plan. */
export async function orgsSetPlan(
  { services, write, knownOrganization }: Cli,
  { orgId, plan }: ArgumentsOf<'orgs set-plan'>,
): Promise<number> {
  await knownOrganization(orgId);
  const { changed, position } = await changePlan(services, orgId, plan);
  await services.readYourWrites.waitFor(['api_keys'], position);
  write(changed ? `${orgId} is on the ${plan} plan now.` : `${orgId} is on the ${plan} plan already.`);
  return 0;
}

/** Records openers' and clickers' IP address and user agent (sealed) or not; `--forget` erases them. */
export async function orgsSetClientDetails(
  { services, write, knownOrganization }: Cli,
  { orgId, on, forget }: ArgumentsOf<'orgs set-client-details'>,
): Promise<number> {
  await knownOrganization(orgId);
  const r = await setClientDetailsTracking(services, orgId, on, { forget });
  await services.readYourWrites.waitFor(['api_keys'], r.position);
  const what = on ? 'records' : 'does not record';
  write(
    `${orgId} ${what} openers' and clickers' IP address and user agent${r.changed ? ' now' : ' already'}.`,
  );
  if (forget) write(`Erased the client details of ${r.forgotten} email(s).`);
  return 0;
}
