import { AppError } from '../../platform/errors.ts';
import { livePauses, queueRows } from '../../processes/delivery/queue-view.ts';
import {
  giveUpDelivery,
  pauseDelivery,
  type QueueControlResult,
  type QueueTarget,
  resumeDelivery,
  retryDelivery,
} from '../../write-side/queue/queue.commands.ts';
import type { ArgumentsOf } from './arguments.ts';
import type { Cli } from './cli.ts';
import { UsageError } from './usage.ts';

/** What a control acts on: a destination, for one organization or (null) every one. */
type Target = Pick<ArgumentsOf<'queue resume'>, 'destination' | 'orgId'>;

const scopeText = (orgId: string | null) => (orgId ? `for ${orgId}` : 'for every organization');

async function control(
  cli: Cli,
  { destination, orgId }: Target,
  act: (target: QueueTarget) => Promise<QueueControlResult>,
  say: (r: QueueControlResult, orgId: string | null) => string,
): Promise<number> {
  if (orgId && !(await cli.knownOrganization(orgId))) return 1;
  const r = await act({ destination, orgId, actor: 'cli' });
  if (r.position) await cli.services.readYourWrites.waitFor(['delivery_pauses'], r.position);
  cli.write(say(r, orgId));
  return 0;
}

/** `queue pause <destination> [--for 1h] [--org X] [--reason text]`: its mail waits until then. */
export async function queuePause(cli: Cli, args: ArgumentsOf<'queue pause'>): Promise<number> {
  const until = new Date(cli.services.clock.now().getTime() + args.ms).toISOString();
  return control(
    cli,
    args,
    (t) => pauseDelivery(cli.services, t, { until, reason: args.reason }).catch(usageOf),
    (r, orgId) => `Delivery to ${r.destination} paused ${scopeText(orgId)} until ${until}.`,
  );
}

/** A rule of the decider that says no (a pause beyond 30 days) is the operator's mistake too. */
const usageOf = (e: unknown): never => {
  if (e instanceof AppError && e.code === 'validation_error') throw new UsageError(e.message);
  throw e;
};

export const queueResume = (cli: Cli, target: Target) =>
  control(
    cli,
    target,
    (t) => resumeDelivery(cli.services, t),
    (r, orgId) =>
      r.changed
        ? `Delivery to ${r.destination} resumed ${scopeText(orgId)}.`
        : `Delivery to ${r.destination} was not paused ${scopeText(orgId)}.`,
  );

export const queueRetry = (cli: Cli, target: Target) =>
  control(
    cli,
    target,
    (t) => retryDelivery(cli.services, t),
    (r, orgId) => `The waiting mail to ${r.destination} ${scopeText(orgId)} is due now.`,
  );

export const queueBounce = (cli: Cli, target: Target) =>
  control(
    cli,
    target,
    (t) => giveUpDelivery(cli.services, t),
    (r, orgId) =>
      `The queued mail to ${r.destination} ${scopeText(orgId)} is given up: each recipient bounces softly.`,
  );

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : '-');

/** `queue [--org X] [--destination D] [--json]`: what waits, over every organization, and the pauses in force. */
export async function queueList(
  { services, write }: Cli,
  { orgId, destination, json }: ArgumentsOf<'queue'>,
): Promise<number> {
  const now = services.clock.now();
  const rows = await queueRows(services.db, { orgId, destination }, now);
  const pauses = await livePauses(services.db, { orgId, destination }, now);
  if (json) {
    for (const r of rows) write(JSON.stringify(r));
    return 0;
  }
  const table = [
    [
      'ORG',
      'MODE',
      'DESTINATION',
      'LANE',
      'QUEUED',
      'DEFERRED',
      'HELD',
      'IN_FLIGHT',
      'OLDEST',
      'PAUSED_UNTIL',
      'LAST',
    ],
    ...rows.map((r) => [
      r.org_id,
      r.mode,
      r.destination,
      r.lane,
      String(r.queued),
      String(r.deferred),
      String(r.held),
      String(r.in_flight),
      iso(r.oldest_queued_at),
      iso(r.paused_until),
      [r.last_classification, r.last_response].filter(Boolean).join(': ') || '-',
    ]),
  ];
  if (rows.length === 0) write('No mail waiting.');
  else {
    const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
    for (const row of table)
      write(
        row
          .map((c, i) => c.padEnd(widths[i]))
          .join('  ')
          .trimEnd(),
      );
  }
  for (const p of pauses)
    write(
      `Paused: ${p.destination} ${p.org_id ? `for ${p.org_id}` : 'for every organization'} until ${iso(p.until)} by ${p.paused_by}${p.reason ? ` (${p.reason})` : ''}`,
    );
  return 0;
}
