import { type DeliveryOutcome, type EmailCommand, emailDecider } from '../../domain/emails/email.decider.ts';
import {
  type ClientDetails,
  type EmailEvent,
  type EmailQueued,
  type EmailScheduled,
  emailStream,
} from '../../domain/emails/email.events.ts';
import { quotaDecider, quotaExceeded, quotaStream } from '../../domain/emails/quota.decider.ts';
import type { SendEmailInput } from '../../domain/emails/request.ts';
import { monthOf, PLANS } from '../../domain/organizations/plans.ts';
import { type AuthContext, metaOf } from '../../platform/auth/auth-context.ts';
import { AppError } from '../../platform/errors.ts';
import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import {
  comparePositions,
  type EventMetadata,
  type Position,
  type StoredEvent,
} from '../../platform/eventstore/types.ts';
import { emailOutcomes } from '../../platform/metrics.ts';
import type { Services } from '../../platform/services.ts';
import { sealClientDetails } from './client-details.ts';
import { type PreparedEmail, prepareEmail, prepareSubmitted, type SubmittedMessage } from './prepare.ts';

export interface Accepted {
  id: string;
  status: 'queued' | 'scheduled';
  sendAt?: string;
  suppressedRecipients: string[];
  position?: Position;
}

/**
 * Takes up to `requested` emails from the month's quota; returns how many may go. Only Free has a hard stop.
 * `request` (the first id the request chose under an Idempotency-Key): a request granted before gets its
 * grant again, not a second one.
 */
export async function consumeQuota(
  services: Services,
  auth: Pick<AuthContext, 'orgId' | 'mode' | 'plan'>,
  requested: number,
  request?: string,
): Promise<number> {
  const plan = PLANS[auth.plan];
  if (!plan.monthlyHardStop || requested === 0) return requested;
  const now = services.clock.now();
  const month = monthOf(now);
  const result = await handleCommand(
    services.store,
    quotaStream(auth.orgId, auth.mode, month),
    quotaDecider,
    { type: 'ConsumeQuota', month, requested, limit: plan.emailsPerMonth, at: now.toISOString(), request },
    { orgId: auth.orgId, mode: auth.mode, actor: 'system' },
    { retries: 50 },
  );
  return result.events[0]?.data.granted ?? result.state.grants[request!];
}

/** The refusal of a send once the month's quota is used up, as of now. */
function monthUsedUp(services: Services, auth: AuthContext) {
  const now = services.clock.now();
  return quotaExceeded(PLANS[auth.plan].emailsPerMonth, monthOf(now), now.toISOString());
}

/** The events `postline_emails_total` counts, by its `outcome` label. */
const OUTCOMES: Partial<Record<EmailEvent['type'], string>> = {
  EmailQueued: 'accepted',
  EmailScheduled: 'accepted',
  EmailDelivered: 'delivered',
  EmailDeliveryDelayed: 'delivery_delayed',
  EmailDelayReported: 'delivery_delayed',
  EmailBounced: 'bounced',
  EmailComplained: 'complained',
};
/** Counts the outcomes a command of this process appended (one that decided nothing appended nothing). */
function countOutcomes<R extends { events: { type: string }[] }>(meta: EventMetadata, result: R): R {
  for (const e of result.events) {
    const outcome = OUTCOMES[e.type as EmailEvent['type']];
    if (outcome) emailOutcomes.inc({ outcome, mode: meta.mode });
  }
  return result;
}

/**
 * Stores the attachment bytes and a submitted message's (the log gets their keys), then appends EmailQueued or
 * EmailScheduled. An email queued already under the chosen id (an earlier attempt's) is the answer.
 */
export async function acceptPrepared(
  services: Services,
  meta: EventMetadata,
  prepared: PreparedEmail,
): Promise<Accepted> {
  const blobs = services.blobs;
  // Written side by side: each put waits for its own sync, and they share their folder's.
  const [attachments, raw] = await Promise.all([
    Promise.all(
      prepared.attachments.map(async ({ bytes, ...rest }) => ({
        ...rest,
        size: bytes.length,
        blobKey: await blobs.put(bytes),
      })),
    ),
    prepared.raw &&
      blobs.put(prepared.raw.bytes).then((blobKey) => ({
        blobKey,
        size: prepared.raw!.bytes.length,
        messageId: prepared.raw!.messageId,
      })),
  ]);
  const content = { ...prepared.content, attachments, ...(raw && { raw }) };
  const result = await handleCommand(
    services.store,
    emailStream(content.emailId),
    emailDecider,
    { type: 'QueueEmail', content, sendAt: prepared.sendAt },
    meta,
    { history: [] },
  ).catch(async (error) => {
    // An id chosen in advance (Idempotency-Key) that another attempt of the same request queued first: that
    // email is this request's answer.
    const earlier =
      error instanceof AppError && error.code === 'conflict' && (await acceptedAs(services, content.emailId));
    if (earlier) return earlier;
    throw error;
  });
  if ('id' in result) return result;
  countOutcomes(meta, result);
  return {
    id: content.emailId,
    status: prepared.sendAt ? 'scheduled' : 'queued',
    ...(prepared.sendAt && { sendAt: prepared.sendAt }),
    suppressedRecipients: content.suppressedRecipients,
    position: result.position,
  };
}

/** The email `emailId` as it was accepted, if it exists: what an earlier attempt of a request committed. */
export async function acceptedAs(
  services: Pick<Services, 'store'>,
  emailId: string,
): Promise<Accepted | undefined> {
  const [first] = await services.store.readStream(emailStream(emailId));
  if (first?.type !== 'EmailQueued' && first?.type !== 'EmailScheduled') return undefined;
  const data = (first as StoredEvent<EmailQueued['type'] | EmailScheduled['type'], EmailScheduled['data']>)
    .data;
  return {
    id: emailId,
    status: first.type === 'EmailScheduled' ? 'scheduled' : 'queued',
    ...(first.type === 'EmailScheduled' && { sendAt: data.sendAt }),
    suppressedRecipients: data.suppressedRecipients,
    position: first.position,
  };
}

/**
 * Under an Idempotency-Key the ids are chosen before the request runs (`ids`); `resumed`: an earlier attempt
 * with them never finished, so each may name an email it already queued, which is then answered as it was.
 */
export interface ChosenIds {
  ids: string[];
  resumed: boolean;
}

export async function sendEmail(
  services: Services,
  auth: AuthContext,
  input: SendEmailInput,
  chosen?: ChosenIds,
): Promise<Accepted> {
  const emailId = chosen?.ids[0];
  const earlier = chosen?.resumed && emailId ? await acceptedAs(services, emailId) : undefined;
  if (earlier) return earlier;
  const prepared = await prepareEmail(services, auth, input, emailId);
  if ((await consumeQuota(services, auth, 1, emailId)) < 1) throw monthUsedUp(services, auth);
  return acceptPrepared(services, metaOf(auth), prepared);
}

/** A message submitted over SMTP (smtp/), on the path of `sendEmail`: actor `smtp`, the message's own bytes. */
export async function sendSubmitted(
  services: Services,
  auth: AuthContext,
  message: SubmittedMessage,
  chosen: ChosenIds,
): Promise<Accepted> {
  const emailId = chosen.ids[0];
  const earlier = chosen.resumed ? await acceptedAs(services, emailId) : undefined;
  if (earlier) return earlier;
  const prepared = await prepareSubmitted(services, auth, message, emailId);
  if ((await consumeQuota(services, auth, 1, emailId)) < 1) throw monthUsedUp(services, auth);
  return acceptPrepared(services, { ...metaOf(auth), actor: 'smtp' }, prepared);
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
  chosen?: ChosenIds,
): Promise<{ items: BatchItem[]; position?: Position }> {
  const earlier = await Promise.all(
    inputs.map((_, i) =>
      chosen?.resumed && chosen.ids[i] ? acceptedAs(services, chosen.ids[i]) : undefined,
    ),
  );
  const prepared = await Promise.all(
    inputs.map((input, i) =>
      earlier[i] || input instanceof AppError
        ? input
        : prepareEmail(services, auth, input, chosen?.ids[i]).catch((e) =>
            e instanceof AppError ? e : Promise.reject(e),
          ),
    ),
  );
  // The quota is asked for the whole request: items an earlier attempt accepted count against its grant.
  const done = earlier.filter(Boolean).length;
  const valid = prepared.filter((p, i) => !earlier[i] && !(p instanceof AppError)).length;
  let granted = 0;
  try {
    granted = valid === 0 ? 0 : await consumeQuota(services, auth, done + valid, chosen?.ids[0]);
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'monthly_quota_exceeded') throw error;
  }
  let taken = done;
  const exceeded = monthUsedUp(services, auth);
  const items = await Promise.all(
    prepared.map(async (p, i): Promise<BatchItem> => {
      const before = earlier[i];
      if (before) return before;
      if (p instanceof AppError) return { error: p };
      if (taken++ >= granted) return { error: exceeded };
      // Others may already be accepted: a failure here is this item's answer, not the whole batch's 500.
      return acceptPrepared(services, metaOf(auth), p as PreparedEmail).catch((error) => {
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

export type { DeliveryOutcome, EmailState } from '../../domain/emails/email.decider.ts';
export { attemptable } from '../../domain/emails/email.decider.ts';
export type { SubmittedMessage } from './prepare.ts';

/** The email's stream and the state it folds to: what a process reads to choose its next command. */
export async function readEmail(services: Pick<Services, 'store'>, emailId: string) {
  const history = await services.store.readStream(emailStream(emailId));
  return { history, state: rebuildState(emailDecider, history) };
}

/** Decides `command` on the email's stream, stamped with the clock's time. `history`: the stream just read. */
function onEmail(
  services: Deps,
  meta: EventMetadata,
  command: Untimed<EmailCommand> & { emailId: string },
  history?: StoredEvent[],
) {
  const timed = { ...command, at: services.clock.now().toISOString() } as EmailCommand;
  return handleCommand(services.store, emailStream(command.emailId), emailDecider, timed, meta, {
    history,
  }).then((r) => countOutcomes(meta, r));
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

/**
 * The MTA is about to send to `recipients`: records the attempt (and `sending`, on the first) for those the decider
 * lets go, which are the only ones to send to (`attemptable`).
 */
export const startDeliveryAttempt = (
  services: Deps,
  meta: EventMetadata,
  emailId: string,
  attempt: { recipients: string[]; endsBy: string },
  history?: StoredEvent[],
) => onEmail(services, meta, { type: 'StartDeliveryAttempt', emailId, ...attempt }, history);

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

export const recordDelayReport = (
  services: Deps,
  meta: EventMetadata,
  emailId: string,
  report: { recipient: string; smtpCode: number | null; smtpResponse: string },
) => onEmail(services, meta, { type: 'RecordDelayReport', emailId, ...report });

/**
 * For the tracking endpoints and the simulator: an open (pixel) or a click (`link`). Who opened (`client`) is
 * kept only as `sealClientDetails` allows.
 */
export const recordEngagement = async (
  services: Deps & Pick<Services, 'db'>,
  meta: EventMetadata,
  e: { type: 'RecordOpen' | 'RecordClick'; emailId: string; client: ClientDetails; link?: string },
) => {
  const client = await sealClientDetails(services, { orgId: meta.orgId, emailId: e.emailId }, e.client);
  const sealed = client === undefined ? {} : { client };
  return onEmail(
    services,
    meta,
    e.type === 'RecordOpen'
      ? { type: 'RecordOpen', emailId: e.emailId, ...sealed }
      : { type: 'RecordClick', emailId: e.emailId, link: e.link ?? '', ...sealed },
  );
};
