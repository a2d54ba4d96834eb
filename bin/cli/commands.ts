import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { projectionStatus, rebuildProjection } from '../../projections/rebuild.ts';
import { createOrganization } from '../../write-side/organizations/commands.ts';
import type { Postline } from '../service.ts';
import { progressBar } from './progress.ts';

export const USAGE = `Usage: postline <command>

  serve                                         run the service (API, projections, processes)
  orgs create --name <name> [--plan free|pro|business] [--json]
                                                create an organization; prints its live and test API keys once
  projections status                            position and lag of every projection
  projections rebuild [name]                    rebuild one projection (or all) from the event log
  streams show <stream-id>                      the history of one stream (e.g. email-em_…), for auditors
`;

export class UsageError extends Error {}

/** Runs one CLI command against an open Postline (local, or inside the running server). Returns the exit code. */
export async function runCommand(argv: string[], postline: Postline, out: Writable): Promise<number> {
  const { services, runner } = postline;
  const [group, action, ...rest] = argv;
  const write = (s: string) => out.write(s.endsWith('\n') ? s : `${s}\n`);

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
    const input = z
      .object({ name: z.string().trim().min(1).max(200), plan: z.enum(['free', 'pro', 'business']) })
      .safeParse(values);
    if (!input.success)
      throw new UsageError('orgs create needs --name <name> and an optional --plan free|pro|business');
    const org = await createOrganization(services, input.data);
    await services.readYourWrites.waitFor(['api_keys'], org.position);
    if (values.json)
      write(JSON.stringify({ org_id: org.orgId, live_key: org.liveKey, test_key: org.testKey }));
    else {
      write(`Organization ${input.data.name} created: ${org.orgId} (plan ${input.data.plan})`);
      write(`  live key: ${org.liveKey}`);
      write(`  test key: ${org.testKey}`);
      write('Store the keys now: they are not shown again.');
    }
    return 0;
  }

  if (group === 'projections' && action === 'status') {
    const rows = await projectionStatus(services.db, services.store, runner.projections);
    write(`${'projection'.padEnd(24)}${'lag'.padStart(8)}  position`);
    for (const r of rows)
      write(`${r.name.padEnd(24)}${String(r.lag).padStart(8)}  ${r.position || '(start)'}`);
    return 0;
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
      const { events } = await rebuildProjection(services.db, services.store, p, progressBar(out, p.name));
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
