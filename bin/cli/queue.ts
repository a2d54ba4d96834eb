import type { ParseArgsConfig } from 'node:util';
import { queueDestination } from '../../domain/queue/queue.decider.ts';
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
import { type Cli, parseOptions } from './cli.ts';
import { UsageError } from './usage.ts';

/** How long `queue pause` holds a destination when `--for` is not given. */
export const DEFAULT_PAUSE = '1h';

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 } as const;

/** `2h`, `30m`, `1h30m`, `1d`: a positive duration in days, hours, minutes and seconds, in that order. */
export function parseDuration(text: string): number | null {
  const m = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text.trim());
  if (!m || text.trim() === '') return null;
  const [d, h, min, s] = m.slice(1).map((x) => Number(x ?? 0));
  const ms = d * UNIT_MS.d + h * UNIT_MS.h + min * UNIT_MS.m + s * UNIT_MS.s;
  return ms > 0 ? ms : null;
}

/** A destination and its scope from `<destination> [--org X]`, with the command's own options. */
function targetOf(rest: string[], usage: string, extra: Record<string, { type: 'string' }> = {}) {
  // Typed loosely, as the options vary by command: each reads its own with a check of their type.
  const { values, positionals } = parseOptions<ParseArgsConfig>(
    { args: rest, options: { org: { type: 'string' }, ...extra }, allowPositionals: true, strict: true },
    usage,
  );
  if (positionals.length !== 1) throw new UsageError(usage);
  const orgId = typeof values.org === 'string' ? values.org : null;
  return { destination: checked(positionals[0]), orgId, values };
}

/** A destination that is no domain name is a usage mistake: exit code 2, saying why. */
function checked(destination: string): string {
  try {
    return queueDestination(destination);
  } catch (e) {
    if (e instanceof AppError) throw new UsageError(`${e.message}: ${destination}`);
    throw e;
  }
}

const scopeText = (orgId: string | null) => (orgId ? `for ${orgId}` : 'for every organization');

async function control(
  cli: Cli,
  { destination, orgId }: { destination: string; orgId: string | null },
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
export async function queuePause(cli: Cli, rest: string[]): Promise<number> {
  const usage = `queue pause needs <destination> and takes --for <duration> (e.g. 30m, 2h, 1d; default ${DEFAULT_PAUSE}, at most 30d), --org <org_id>, --reason <text>`;
  const target = targetOf(rest, usage, { for: { type: 'string' }, reason: { type: 'string' } });
  const { values } = target;
  const ms = parseDuration(typeof values.for === 'string' ? values.for : DEFAULT_PAUSE);
  if (ms === null) throw new UsageError(`Not a duration: ${values.for}. ${usage}`);
  const until = new Date(cli.services.clock.now().getTime() + ms).toISOString();
  const reason = typeof values.reason === 'string' ? values.reason : null;
  return control(
    cli,
    target,
    (t) => pauseDelivery(cli.services, t, { until, reason }).catch(usageOf),
    (r, orgId) => `Delivery to ${r.destination} paused ${scopeText(orgId)} until ${until}.`,
  );
}

/** A rule of the decider that says no (a pause beyond 30 days) is the operator's mistake too. */
const usageOf = (e: unknown): never => {
  if (e instanceof AppError && e.code === 'validation_error') throw new UsageError(e.message);
  throw e;
};

export const queueResume = (cli: Cli, rest: string[]) =>
  control(
    cli,
    targetOf(rest, 'queue resume needs <destination> and takes --org <org_id>'),
    (t) => resumeDelivery(cli.services, t),
    (r, orgId) =>
      r.changed
        ? `Delivery to ${r.destination} resumed ${scopeText(orgId)}.`
        : `Delivery to ${r.destination} was not paused ${scopeText(orgId)}.`,
  );

export const queueRetry = (cli: Cli, rest: string[]) =>
  control(
    cli,
    targetOf(rest, 'queue retry needs <destination> and takes --org <org_id>'),
    (t) => retryDelivery(cli.services, t),
    (r, orgId) => `The waiting mail to ${r.destination} ${scopeText(orgId)} is due now.`,
  );

export const queueBounce = (cli: Cli, rest: string[]) =>
  control(
    cli,
    targetOf(rest, 'queue bounce needs <destination> and takes --org <org_id>'),
    (t) => giveUpDelivery(cli.services, t),
    (r, orgId) =>
      `The queued mail to ${r.destination} ${scopeText(orgId)} is given up: each recipient bounces softly.`,
  );

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : '-');

/** `queue [--org X] [--destination D] [--json]`: what waits, over every organization, and the pauses in force. */
export async function queueList({ services, write }: Cli, rest: string[]): Promise<number> {
  const usage = 'queue takes --org <org_id>, --destination <domain>, --json';
  const { values } = parseOptions(
    {
      args: rest,
      options: { org: { type: 'string' }, destination: { type: 'string' }, json: { type: 'boolean' } },
      strict: true,
    },
    usage,
  );
  const destination = values.destination === undefined ? undefined : checked(values.destination);
  const now = services.clock.now();
  const rows = await queueRows(services.db, { orgId: values.org, destination }, now);
  const pauses = await livePauses(services.db, { orgId: values.org, destination }, now);
  if (values.json) {
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
