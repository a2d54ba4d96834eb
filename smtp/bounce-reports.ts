import { buffer } from 'node:stream/consumers';
import type { SMTPServerSession } from 'smtp-server';
import { refusalOf } from '../domain/emails/bounce-classes.ts';
import { parseVerp } from '../domain/emails/verp.ts';
import type { EventMetadata } from '../platform/eventstore/types.ts';
import type { Services } from '../platform/services.ts';
import { storableText } from '../platform/storable-text.ts';
import {
  readEmail,
  recordBounceReport,
  recordComplaint,
  recordDelayReport,
} from '../write-side/emails/email.commands.ts';
import type { SpooledMessage } from './mx-message.ts';
import type { ReplyName } from './replies.ts';
import { type Report, readReport } from './reports.ts';
import { feedbackAddress } from './return-paths.ts';
import type { SmtpServers } from './smtp-server.ts';

/**
 * Bounce and complaint reports (docs/bounces.md): what arrives at the return paths of Postline's own live emails
 * and at the feedback address is read as a bounce (DSN or plain text) or a complaint (ARF) and recorded on the
 * email it names, through the email's commands. What an outcome means for the suppression list is the suppression
 * policy's (processes/suppression-policy/).
 */
export function bounceReports(
  servers: SmtpServers,
  services: Services,
  onReturnPathDomain: (address: string) => boolean,
) {
  const feedback = feedbackAddress(services.config.POSTLINE_MX_HOST);

  /** Whether a return path names a live email of ours. */
  async function namesLiveEmail(address: string) {
    const verp = parseVerp(address);
    if (!verp || !onReturnPathDomain(address)) return false;
    const { state } = await readEmail(services, verp.emailId);
    return state.exists && state.mode === 'live';
  }

  /** Records a report on the email `emailId`; returns whether anything was recorded. */
  async function apply(emailId: string, report: Report): Promise<boolean> {
    const { state } = await readEmail(services, emailId);
    if (!state.exists || state.mode !== 'live') return false;
    const meta: EventMetadata = { orgId: state.orgId, mode: state.mode, actor: 'mx' };
    const known = Object.keys(state.recipients);
    /** The email's recipient a report names; an unnamed one is the email's only recipient, if it has one. */
    const recipientOf = (named: string | undefined, text = '') => {
      const lower = named?.toLowerCase();
      if (lower) return known.includes(lower) ? lower : undefined;
      const mentioned = known.filter((r) => text.toLowerCase().includes(r));
      return mentioned.length === 1 ? mentioned[0] : known.length === 1 ? known[0] : undefined;
    };
    if (report.kind === 'complaint') {
      const recipient = recipientOf(report.recipient);
      if (!recipient) return false;
      const r = await recordComplaint(services, meta, emailId, recipient);
      return r.state.exists && r.state.recipients[recipient]?.status === 'complained';
    }
    if (report.kind !== 'bounce') return false;
    let recorded = false;
    for (const bounced of report.recipients) {
      const recipient = recipientOf(bounced.recipient || undefined, report.text);
      if (!recipient) continue;
      const code = /\b([45]\d\d)\b/.exec(bounced.diagnostic)?.[1];
      const outcome = {
        recipient,
        smtpCode: code ? Number(code) : null,
        smtpResponse: storableText(bounced.diagnostic || `status ${bounced.status}`, 1000),
      };
      recorded = true;
      const permanent = bounced.status.startsWith('5');
      // A DSN's Action decides (RFC 3464): `failed` is final, `delayed` is news that the receiving side tries
      // again; without one (a plain-text bounce) the status does, permanent (5) a bounce, transient a delay.
      if (bounced.action ? bounced.action === 'failed' : permanent) {
        const refusal = refusalOf(`${bounced.status} ${bounced.diagnostic}`, services.policies.bounceRules);
        // A queue that gave up on a transient failure says nothing final of the address: soft, never suppressed.
        const bounceType = permanent ? refusal.bounceType : 'soft';
        await recordBounceReport(services, meta, emailId, { ...outcome, ...refusal, bounceType });
      } else await recordDelayReport(services, meta, emailId, outcome);
    }
    return recorded;
  }

  return {
    /**
     * The feedback address (on the MX host alone) and return paths on a return-path domain: `b+…@` a customer's
     * inbound domain is that customer's mail.
     */
    takes: (address: string) =>
      address.toLowerCase() === feedback || (parseVerp(address) !== null && onReturnPathDomain(address)),

    async refusal(address: string): Promise<ReplyName | null> {
      if (address.toLowerCase() === feedback) return null;
      return (await namesLiveEmail(address)) ? null : 'unknownReturnPath';
    },

    /**
     * Reads the message as a report on the emails its return paths here name (or, sent elsewhere, the one it
     * quotes). Resolves with whether its stored copy is to be kept: when it matched nothing, for an operator.
     */
    async deliver(message: SpooledMessage, addresses: string[], _session: SMTPServerSession) {
      const blob = message.blob;
      const report = await readReport(await buffer(blob.reader())).catch((): Report => ({ kind: 'other' }));
      const emailIds = new Set<string>();
      // Only the addresses routed here: a `b+…@` a customer's inbound domain beside them is that customer's mail.
      for (const address of addresses) {
        const emailId =
          parseVerp(address)?.emailId ?? (report.kind === 'other' ? undefined : report.originalEmailId);
        if (emailId) emailIds.add(emailId);
      }
      let recorded = false;
      for (const emailId of emailIds) recorded = (await apply(emailId, report)) || recorded;
      if (recorded) return false;
      // Never an error for the sender: what matches nothing is kept for an operator to look at.
      await message.keep();
      servers.log.warn(
        { blobKey: blob.key, kind: report.kind, emails: [...emailIds] },
        'MX message matched no email',
      );
      return true;
    },
  };
}
