import { listParked } from '../../platform/eventstore/parked-events.ts';
import { projectionStatus, rebuildProjection } from '../../projections/rebuild.ts';
import type { ArgumentsOf } from './arguments.ts';
import type { Cli } from './cli.ts';
import { progressBar } from './progress.ts';
import { UsageError } from './usage.ts';

/** Position and lag of every projection, and the parked events (exit code 1 while there are any). */
export async function projectionsStatus(
  { services, runner, write }: Cli,
  _: ArgumentsOf<'projections status'>,
): Promise<number> {
  const rows = await projectionStatus(services.db, services.store, runner.projections);
  write(`${'projection'.padEnd(24)}${'lag'.padStart(8)}  position`);
  for (const r of rows) write(`${r.name.padEnd(24)}${String(r.lag).padStart(8)}  ${r.position || '(start)'}`);
  const parked = await listParked(services.db);
  if (parked.length === 0) return 0;
  write(`\nParked events (a consumer failed on them and went on without them; retried with back-off):`);
  for (const p of parked)
    write(
      `${p.consumer}  ${p.stream}@${p.position}  ${p.type}  attempts ${p.attempts}, next ${p.nextAttemptAt}\n    ${p.error}`,
    );
  return 1;
}

/** Rebuilds one projection (or all) from the event log. */
export async function projectionsRebuild(
  { services, runner, out, write }: Cli,
  { name }: ArgumentsOf<'projections rebuild'>,
): Promise<number> {
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

/** The history of one stream, for auditors. */
export async function streamsShow(
  { services, write }: Cli,
  { streamId }: ArgumentsOf<'streams show'>,
): Promise<number> {
  const events = await services.store.readStream(streamId);
  if (events.length === 0) {
    write(`Stream ${streamId} has no events.`);
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
