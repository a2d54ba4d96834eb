import { blobStoreFor } from '../../platform/blob-store.ts';
import { AppError } from '../../platform/errors.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import {
  comparePositions,
  type EventMetadata,
  type Position,
  type StoredEvent,
} from '../../platform/eventstore/types.ts';
import type { AuthContext } from '../../platform/http/auth-context.ts';
import type { Services } from '../../platform/services.ts';
import { type DeliveryOutcome, type EmailCommand, emailDecider } from './decider.ts';
import { emailStream } from './events.ts';
import { type PreparedEmail, prepareEmail } from './prepare.ts';
import { monthOf, PLAN_QUOTAS, quotaDecider, quotaExceeded, quotaStream } from './quota.ts';
import type { SendEmailInput } from './request.ts';

export const metaOf = (auth: AuthContext): EventMetadata => ({
  orgId: auth.orgId,
  mode: auth.mode,
  actor: auth.keyId,
});

export interface Accepted {
  id: string;
  status: 'queued' | 'scheduled';
  sendAt?: string;
  suppressedRecipients: string[];
  position?: Position;
}

/** Takes up to `requested` emails from the month's quota; returns how many may go. Only Free has a hard stop. */
export async function consumeQuota(
  services: Services,
  auth: AuthContext,
  requested: number,
): Promise<number> {
  const plan = PLAN_QUOTAS[auth.plan];
  if (!plan.hardStop || requested === 0) return requested;
  const now = services.clock.now();
  const month = monthOf(now);
  const result = await handleCommand(
    services.store,
    quotaStream(auth.orgId, auth.mode, month),
    quotaDecider,
    { type: 'ConsumeQuota', month, requested, limit: plan.included, at: now.toISOString() },
    { ...metaOf(auth), actor: 'system' },
    { retries: 50 },
  );
  return result.events[0].data.granted;
}

/** Stores the attachment bytes (the log gets their keys), then appends EmailQueued or EmailScheduled. */
async function accept(services: Services, auth: AuthContext, prepared: PreparedEmail): Promise<Accepted> {
  const blobs = blobStoreFor(services.config);
  const attachments = [];
  for (const a of prepared.attachments) {
    const blobKey = await blobs.put(a.bytes);
    const { bytes, ...rest } = a;
    attachments.push({ ...rest, size: bytes.length, blobKey });
  }
  const content = { ...prepared.content, attachments };
  const result = await handleCommand(
    services.store,
    emailStream(content.emailId),
    emailDecider,
    { type: 'QueueEmail', content, sendAt: prepared.sendAt },
    metaOf(auth),
    { history: [] },
  );
  return {
    id: content.emailId,
    status: prepared.sendAt ? 'scheduled' : 'queued',
    ...(prepared.sendAt && { sendAt: prepared.sendAt }),
    suppressedRecipients: content.suppressedRecipients,
    position: result.position,
  };
}

export async function sendEmail(
  services: Services,
  auth: AuthContext,
  input: SendEmailInput,
): Promise<Accepted> {
  const prepared = await prepareEmail(services, auth, input);
  if ((await consumeQuota(services, auth, 1)) < 1)
    throw quotaExceeded(PLAN_QUOTAS[auth.plan].included, monthOf(services.clock.now()));
  return accept(services, auth, prepared);
}

export type BatchItem = Accepted | { error: AppError };

/**
 * Each item is validated and accepted on its own: a bad item gets its error, the others go. Items that pass
 * validation take the quota in input order; those beyond what is left get `monthly_quota_exceeded`.
 */
export async function sendBatch(
  services: Services,
  auth: AuthContext,
  inputs: (SendEmailInput | AppError)[],
): Promise<{ items: BatchItem[]; position?: Position }> {
  const prepared = await Promise.all(
    inputs.map((input) =>
      input instanceof AppError
        ? input
        : prepareEmail(services, auth, input).catch((e) => (e instanceof AppError ? e : Promise.reject(e))),
    ),
  );
  const valid = prepared.filter((p) => !(p instanceof AppError)).length;
  let granted = 0;
  try {
    granted = await consumeQuota(services, auth, valid);
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'monthly_quota_exceeded') throw error;
  }
  let taken = 0;
  const exceeded = quotaExceeded(PLAN_QUOTAS[auth.plan].included, monthOf(services.clock.now()));
  const items = await Promise.all(
    prepared.map(async (p): Promise<BatchItem> => {
      if (p instanceof AppError) return { error: p };
      if (taken++ >= granted) return { error: exceeded };
      // Others may already be accepted: a failure here is this item's answer, not the whole batch's 500
      // (which would free the Idempotency-Key and let a retry send the accepted ones twice).
      return accept(services, auth, p).catch((error) => {
        if (error instanceof AppError) return { error };
        services.log.error({ err: error }, 'batch item failed');
        return { error: new AppError('internal_error', 'This email could not be accepted; send it again.') };
      });
    }),
  );
  const positions = items.flatMap((i) => ('position' in i && i.position ? [i.position] : []));
  return { items, position: positions.sort(comparePositions).at(-1) };
}

type Deps = Pick<Services, 'store' | 'clock'>;
/** A command without its time: `onEmail` stamps it with the clock. */
type Untimed<C> = C extends unknown ? Omit<C, 'at'> : never;

/** Decides `command` on the email's stream, stamped with the clock's time. `history`: the stream just read. */
function onEmail(
  services: Deps,
  meta: EventMetadata,
  command: Untimed<EmailCommand> & { emailId: string },
  history?: StoredEvent[],
) {
  const timed = { ...command, at: services.clock.now().toISOString() } as EmailCommand;
  return handleCommand(services.store, emailStream(command.emailId), emailDecider, timed, meta, { history });
}

export const cancelEmail = (services: Services, auth: AuthContext, emailId: string) =>
  onEmail(services, metaOf(auth), { type: 'CancelEmail', emailId, orgId: auth.orgId, mode: auth.mode });

export const rescheduleEmail = (services: Services, auth: AuthContext, emailId: string, sendAt: string) =>
  onEmail(services, metaOf(auth), {
    type: 'RescheduleEmail',
    emailId,
    orgId: auth.orgId,
    mode: auth.mode,
    sendAt,
  });

// Commands of the process managers (scheduler, delivery, simulator, tracking). `meta` is the email's org and
// mode with actor `system`; each is idempotent, so a process that sees an event twice does no harm.

export const systemMeta = (m: { orgId: string; mode: EventMetadata['mode'] }): EventMetadata => ({
  orgId: m.orgId,
  mode: m.mode,
  actor: 'system',
});

export const releaseEmail = (services: Deps, meta: EventMetadata, emailId: string) =>
  onEmail(services, meta, { type: 'ReleaseEmail', emailId });

export const startSending = (services: Deps, meta: EventMetadata, emailId: string, history?: StoredEvent[]) =>
  onEmail(services, meta, { type: 'StartSending', emailId }, history);

export const recordOutcomes = (
  services: Deps,
  meta: EventMetadata,
  emailId: string,
  messageId: string,
  outcomes: DeliveryOutcome[],
  history?: StoredEvent[],
) => onEmail(services, meta, { type: 'RecordDeliveryOutcomes', emailId, messageId, outcomes }, history);

export const recordComplaint = (services: Deps, meta: EventMetadata, emailId: string, recipient: string) =>
  onEmail(services, meta, { type: 'RecordComplaint', emailId, recipient });

/**
 * For the inbound MX: a bounce report (DSN) matched to the email by its VERP return path. The caller adds the
 * `hard_bounce` suppression for a hard one, as the delivery process does.
 */
export const recordBounceReport = (
  services: Deps,
  meta: EventMetadata,
  emailId: string,
  report: { recipient: string; bounceType: 'hard' | 'soft'; smtpCode: number | null; smtpResponse: string },
) => onEmail(services, meta, { type: 'RecordBounceReport', emailId, ...report });

/** For the tracking endpoints: an open (pixel) or a click (`link`). */
export const recordEngagement = (
  services: Deps,
  meta: EventMetadata,
  e: { type: 'RecordOpen' | 'RecordClick'; emailId: string; userAgent: string; ip: string; link?: string },
) =>
  onEmail(
    services,
    meta,
    e.type === 'RecordOpen'
      ? { type: 'RecordOpen', emailId: e.emailId, userAgent: e.userAgent, ip: e.ip }
      : { type: 'RecordClick', emailId: e.emailId, userAgent: e.userAgent, ip: e.ip, link: e.link ?? '' },
  );
