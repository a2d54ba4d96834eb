import type { BounceClass } from '../../domain/emails/bounce-classes.ts';
import type { DeliveryOutcome } from '../../domain/emails/delivery-attempts.ts';
import { type EmailCommand, emailDecider } from '../../domain/emails/email.decider.ts';
import { type ClientDetails, emailStream } from '../../domain/emails/email.events.ts';
import { foldEmail } from '../../domain/emails/email.state.ts';
import { type AuthContext, metaOf } from '../../platform/auth/auth-context.ts';
import { handleCommand, inSequence } from '../../platform/eventstore/command.ts';
import type { EventMetadata, StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { sealClientDetails } from './client-details.ts';
import { countOutcomes } from './email-outcomes.ts';

type Deps = Pick<Services, 'store' | 'clock'>;
/** A command without its time: `onEmail` stamps it with the clock. */
type Untimed<C> = C extends unknown ? Omit<C, 'at'> : never;

export type { DeliveryOutcome } from '../../domain/emails/delivery-attempts.ts';
export { attemptable } from '../../domain/emails/delivery-attempts.ts';
export type { EmailState } from '../../domain/emails/email.state.ts';

/**
 * The email's stream and the state it folds to: what a process reads to choose its next command. `known`: the
 * stream as the caller already holds it, not read again.
 */
export async function readEmail(services: Pick<Services, 'store'>, emailId: string, known?: StoredEvent[]) {
  const history = known ?? (await services.store.readStream(emailStream(emailId)));
  return { history, state: foldEmail(history) };
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

export const withdrawEmail = (services: Deps, meta: EventMetadata, emailId: string) =>
  onEmail(services, meta, { type: 'WithdrawEmail', emailId });

export const startSending = (services: Deps, meta: EventMetadata, emailId: string, history?: StoredEvent[]) =>
  onEmail(services, meta, { type: 'StartSending', emailId }, history);

/**
 * For the simulator, whose sends leave at once: sending started and sent (`StartSending`, then
 * `RecordDeliveryOutcomes` with no outcome yet), decided on one reading of the stream and appended together.
 */
export const sendAtOnce = (
  services: Deps,
  meta: EventMetadata,
  emailId: string,
  messageId: string,
  history?: StoredEvent[],
) => {
  const at = services.clock.now().toISOString();
  const commands: EmailCommand[] = [
    { type: 'StartSending', emailId, at },
    { type: 'RecordDeliveryOutcomes', emailId, messageId, outcomes: [], at },
  ];
  return handleCommand(services.store, emailStream(emailId), inSequence(emailDecider), commands, meta, {
    history,
  }).then((r) => countOutcomes(meta, r));
};

/**
 * The MTA is about to send to `recipients`: records the attempt (and `sending`, on the first) for those the decider
 * lets go, which are the only ones to send to (`attemptable`).
 */
export const startDeliveryAttempt = (
  services: Deps,
  meta: EventMetadata,
  emailId: string,
  attempt: { recipients: string[]; endsBy: string; early?: boolean; source?: string; sourceAddress?: string },
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
 * For the inbound MX: a bounce report (DSN) matched to the email by its VERP return path. A hard one is suppressed
 * by the suppression policy (processes/suppression-policy/), as every hard bounce is.
 */
export const recordBounceReport = (
  services: Deps,
  meta: EventMetadata,
  emailId: string,
  report: {
    recipient: string;
    bounceType: 'hard' | 'soft';
    classification: BounceClass;
    smtpCode: number | null;
    smtpResponse: string;
  },
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
  services: Deps & Pick<Services, 'db' | 'lookUps'>,
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
