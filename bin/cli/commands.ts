import { open } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { AppError } from '../../platform/errors.ts';
import { listParked } from '../../platform/eventstore/parked-events.ts';
import { workContactImport } from '../../processes/contact-import/contact-import-run.ts';
import { projectionStatus, rebuildProjection } from '../../projections/rebuild.ts';
import {
  findApiKeyById,
  findOrganization,
  listOrganizations,
} from '../../read-side/api-keys/api-keys.queries.ts';
import { planJson } from '../../read-side/organizations/organizations.queries.ts';
import { createApiKey, deleteApiKey } from '../../write-side/api-keys/api-key.commands.ts';
import {
  contactImportReport,
  startContactImport,
} from '../../write-side/contact-imports/contact-import.commands.ts';
import {
  changePlan,
  createOrganization,
  setClientDetailsTracking,
} from '../../write-side/organizations/organization.commands.ts';
import type { Postline } from '../service.ts';
import { plansTable, priceText } from './plan-text.ts';
import { progressBar } from './progress.ts';

export const USAGE = `Usage: postline <command>

  serve                                         run the service (API, projections, processes)
  openapi                                       print the OpenAPI document of the API (JSON)
  orgs create --name <name> [--plan free|pro|business] [--json]
                                                create an organization; prints its live and test API keys once
  orgs list [--json]                            every organization, its plan (price) and its keys in use per
                                                mode; then what each plan costs and includes
  orgs set-plan <org_id> <free|pro|business>    move an organization to another plan
  orgs set-client-details <org_id> <on|off> [--forget]
                                                record openers' and clickers' IP address and user agent
                                                (sealed) or not; --forget erases what was recorded
  keys create --org <org_id> [--mode live|test] [--permission full_access|sending_access] [--name <name>] [--json]
                                                a new API key for an organization (one that has none left, too)
  keys revoke <key_id>                          delete an API key: refused at once in every process
  contacts import <file.csv> --org <org_id> [--mode live|test] [--audience <audience_id>]
                                                import contacts from a CSV file (header row with email;
                                                first_name, last_name; other columns become properties)
  projections status                            position and lag of every projection, and parked events
                                                (exit code 1 while there are any)
  projections rebuild [name]                    rebuild one projection (or all) from the event log
  streams show <stream-id>                      the history of one stream (e.g. email-em_…), for auditors
`;

export class UsageError extends Error {}

/** Runs one CLI command against an open Postline (local, or inside the running server). Returns the exit code. */
export async function runCommand(argv: string[], postline: Postline, out: Writable): Promise<number> {
  const { services, runner } = postline;
  const [group, action, ...rest] = argv;
  const write = (s: string) => out.write(s.endsWith('\n') ? s : `${s}\n`);
  /** The command's input, checked; `usage` says what it needs when it is not right. */
  const parse = <T extends z.ZodType>(schema: T, input: unknown, usage: string): z.output<T> => {
    const parsed = schema.safeParse(input);
    if (!parsed.success) throw new UsageError(usage);
    return parsed.data;
  };
  /** Whether the organization exists; says so when it does not. */
  const knownOrganization = async (orgId: string) => {
    if (await findOrganization(services.db, orgId)) return true;
    write(`No organization ${orgId} (npx postline orgs list shows them).`);
    return false;
  };

  if (group === 'orgs' && action === 'create') {
    const { values } = parseArgs({
      args: rest,
      options: {
        name: { type: 'string' },
        plan: { type: 'string', default: 'free' },
        json: { type: 'boolean', default: false },
      },
      strict: true,
    });
    const input = parse(
      z.object({ name: z.string().trim().min(1).max(200), plan: z.enum(['free', 'pro', 'business']) }),
      values,
      'orgs create needs --name <name> and an optional --plan free|pro|business',
    );
    const org = await createOrganization(services, input);
    await services.readYourWrites.waitFor(['api_keys'], org.position);
    if (values.json)
      write(JSON.stringify({ org_id: org.orgId, live_key: org.liveKey, test_key: org.testKey }));
    else {
      write(`Organization ${input.name} created: ${org.orgId} (plan ${input.plan})`);
      write(`  live key: ${org.liveKey}`);
      write(`  test key: ${org.testKey}`);
      write('Store the keys now: they are not shown again.');
    }
    return 0;
  }

  if (group === 'orgs' && action === 'list') {
    const { values } = parseArgs({ args: rest, options: { json: { type: 'boolean', default: false } } });
    const rows = await listOrganizations(services.db);
    for (const o of rows) {
      const created = new Date(o.created_at).toISOString();
      const plan = planJson(o.plan);
      if (values.json)
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
    if (values.json) return 0;
    if (rows.length === 0) write('No organizations yet: npx postline orgs create --name <name>');
    write(['', ...plansTable()].join('\n'));
    return 0;
  }

  if (group === 'orgs' && action === 'set-plan') {
    const [orgId, plan] = parse(
      z.tuple([z.string().min(1), z.enum(['free', 'pro', 'business'])]),
      rest.slice(0, 2),
      'orgs set-plan needs <org_id> <free|pro|business>',
    );
    if (!(await knownOrganization(orgId))) return 1;
    const { changed, position } = await changePlan(services, orgId, plan);
    await services.readYourWrites.waitFor(['api_keys'], position);
    write(changed ? `${orgId} is on the ${plan} plan now.` : `${orgId} is on the ${plan} plan already.`);
    return 0;
  }

  if (group === 'orgs' && action === 'set-client-details') {
    const { values, positionals } = parseArgs({
      args: rest,
      options: { forget: { type: 'boolean', default: false } },
      allowPositionals: true,
      strict: true,
    });
    const [orgId, setting] = parse(
      z.tuple([z.string().min(1), z.enum(['on', 'off'])]),
      positionals,
      'orgs set-client-details needs <org_id> <on|off> and an optional --forget',
    );
    if (!(await knownOrganization(orgId))) return 1;
    const on = setting === 'on';
    const r = await setClientDetailsTracking(services, orgId, on, { forget: values.forget });
    await services.readYourWrites.waitFor(['api_keys'], r.position);
    const what = on ? 'records' : 'does not record';
    write(
      `${orgId} ${what} openers' and clickers' IP address and user agent${r.changed ? ' now' : ' already'}.`,
    );
    if (values.forget) write(`Erased the client details of ${r.forgotten} email(s).`);
    return 0;
  }

  if (group === 'keys' && action === 'create') {
    const { values } = parseArgs({
      args: rest,
      options: {
        org: { type: 'string' },
        mode: { type: 'string', default: 'live' },
        permission: { type: 'string', default: 'full_access' },
        name: { type: 'string', default: 'CLI' },
        json: { type: 'boolean', default: false },
      },
      strict: true,
    });
    const { org, mode, permission, name } = parse(
      z.object({
        org: z.string().min(1),
        mode: z.enum(['live', 'test']),
        permission: z.enum(['full_access', 'sending_access']),
        name: z.string().trim().min(1).max(200),
      }),
      values,
      'keys create needs --org <org_id>, and takes --mode live|test, --permission full_access|sending_access, --name',
    );
    if (!(await knownOrganization(org))) return 1;
    const key = await createApiKey(
      services,
      { orgId: org, mode, actor: 'cli' },
      { name, permission, domainId: null },
    );
    await services.readYourWrites.waitFor(['api_keys'], key.position);
    if (values.json) write(JSON.stringify({ key_id: key.keyId, key: key.key, mode, permission }));
    else {
      write(`API key ${key.keyId} created for ${org} (${mode}, ${permission}): ${key.key}`);
      write('Store the key now: it is not shown again.');
    }
    return 0;
  }

  if (group === 'keys' && action === 'revoke' && rest[0]) {
    const found = await findApiKeyById(services.db, rest[0]);
    if (!found) {
      write(`No API key ${rest[0]} in use.`);
      return 1;
    }
    const { position } = await deleteApiKey(
      services,
      { orgId: found.org_id, mode: found.mode, actor: 'cli' },
      found.id,
    );
    await services.readYourWrites.waitFor(['api_keys'], position);
    write(`API key ${found.id} of ${found.org_id} (${found.mode}) revoked.`);
    return 0;
  }

  if (group === 'contacts' && action === 'import') {
    const { values, positionals } = parseArgs({
      args: rest,
      options: {
        org: { type: 'string' },
        mode: { type: 'string', default: 'live' },
        audience: { type: 'string' },
      },
      allowPositionals: true,
      strict: true,
    });
    const { file, org, mode, audience } = parse(
      z.object({
        file: z.string().min(1),
        org: z.string().min(1),
        mode: z.enum(['live', 'test']),
        audience: z.string().min(1).optional(),
      }),
      { ...values, file: positionals.length === 1 ? positionals[0] : undefined },
      'contacts import needs <file.csv> and --org <org_id>, and takes --mode live|test and --audience <audience_id>',
    );
    if (!(await knownOrganization(org))) return 1;
    const meta = { orgId: org, mode, actor: 'cli' } as const;
    let importId: string;
    try {
      // Opened first: a file that cannot be read is an answer here, not an error event on a stream.
      const handle = await open(resolve(file));
      ({ importId } = await startContactImport(services, meta, {
        audienceId: audience ?? null,
        file: handle.createReadStream(),
        maxBytes: services.config.CONTACT_IMPORT_MAX_BYTES,
      }).finally(() => handle.close()));
    } catch (error: any) {
      if (error instanceof AppError) write(`${file}: ${error.message}`);
      else if (error?.code === 'ENOENT' || error?.code === 'EACCES' || error?.code === 'EISDIR')
        write(`${file}: cannot be read (${error.code}).`);
      else throw error;
      return 1;
    }
    // The import is worked here, through the code the service's process runs (a running service may share it).
    const bar = progressBar(out, 'import', 'rows');
    const onProgress = (s: { processed: number; rowsTotal: number | null }) =>
      bar(s.processed, s.rowsTotal ?? 0);
    let state = await workContactImport(services, importId, { onProgress });
    // A running service took part of the work: this run goes on from where the log stands until the job ends.
    while (state.exists && (state.status === 'queued' || state.status === 'running')) {
      await new Promise((r) => setTimeout(r, 200));
      state = await workContactImport(services, importId, { onProgress });
    }
    if (state.exists && state.status === 'completed') onProgress(state);
    const report = await contactImportReport(services, importId);
    if (report.status === 'failed') {
      write(`${file}: ${report.error?.line ? `line ${report.error.line}: ` : ''}${report.error?.message}`);
      return 1;
    }
    write(
      `Imported ${file} (${importId}): ${report.rowsTotal} rows, ${report.created} created, ${report.updated} updated, ${report.skipped} skipped.`,
    );
    for (const row of report.invalidRows) write(`  line ${row.line}: ${row.reason}`);
    if (report.skipped > report.invalidRows.length)
      write(`  … and ${report.skipped - report.invalidRows.length} more skipped rows, not listed.`);
    return 0;
  }

  if (group === 'projections' && action === 'status') {
    const rows = await projectionStatus(services.db, services.store, runner.projections);
    write(`${'projection'.padEnd(24)}${'lag'.padStart(8)}  position`);
    for (const r of rows)
      write(`${r.name.padEnd(24)}${String(r.lag).padStart(8)}  ${r.position || '(start)'}`);
    const parked = await listParked(services.db);
    if (parked.length === 0) return 0;
    write(`\nParked events (a consumer failed on them and went on without them; retried with back-off):`);
    for (const p of parked)
      write(
        `${p.consumer}  ${p.stream}@${p.position}  ${p.type}  attempts ${p.attempts}, next ${p.nextAttemptAt}\n    ${p.error}`,
      );
    return 1;
  }

  if (group === 'projections' && action === 'rebuild') {
    const name = rest[0];
    const chosen = name ? runner.projections.filter((p) => p.name === name) : runner.projections;
    if (chosen.length === 0) {
      throw new UsageError(
        `Unknown projection ${name}; known: ${runner.projections.map((p) => p.name).join(', ')}`,
      );
    }
    for (const p of chosen) {
      const { events } = await rebuildProjection(
        services.db,
        services.store,
        p,
        services.log,
        progressBar(out, p.name),
      );
      write(`${p.name}: rebuilt from ${events} events and swapped in`);
    }
    return 0;
  }

  if (group === 'streams' && action === 'show' && rest[0]) {
    const events = await services.store.readStream(rest[0]);
    if (events.length === 0) {
      write(`Stream ${rest[0]} has no events.`);
      return 1;
    }
    for (const e of events) {
      write(
        JSON.stringify({
          revision: e.revision,
          type: e.type,
          at: e.createdAt.toISOString(),
          data: e.data,
          metadata: e.metadata,
        }),
      );
    }
    return 0;
  }

  throw new UsageError(USAGE);
}
