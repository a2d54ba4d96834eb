import { buffer } from 'node:stream/consumers';
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { installationBounceDomain } from '../domain/domains/dns-records.ts';
import { domainOf } from '../domain/emails/addresses.ts';
import { parseVerp } from '../domain/emails/verp.ts';
import { MimeShape } from '../domain/received-emails/mime-shape.ts';
import type { BlobWriter } from '../platform/blob-store.ts';
import type { EventMetadata } from '../platform/eventstore/types.ts';
import type { Services } from '../platform/services.ts';
import { storableText } from '../platform/storable-text.ts';
import {
  unsubscribeFrom,
  unsubscribeTarget,
  unsubscribeTokenOf,
} from '../write-side/broadcasts/unsubscribe.commands.ts';
import {
  readEmail,
  recordBounceReport,
  recordComplaint,
  recordDelayReport,
} from '../write-side/emails/email.commands.ts';
import { type InboundTarget, receiveMessage } from '../write-side/received-emails/received-email.commands.ts';
import { suppressForEmail } from '../write-side/suppressions/suppression.commands.ts';
import { readMessage } from './message-reader.ts';
import { answer, type ReplyName, SmtpReply } from './replies.ts';
import { type Report, readReport } from './reports.ts';
import { rspamdScorer } from './rspamd.ts';
import { inboundAuthenticator } from './sender-authentication.ts';
import type { FrontDoor } from './smtp-server.ts';

/** Recipients one message may have at the MX. */
const MAX_RECIPIENTS = 100;

/** The address complaint feedback loops (Microsoft JMRP, Yahoo CFL, …) are registered with. */
export const feedbackAddress = (mxHost: string) => `fbl@${mxHost.toLowerCase()}`;

/**
 * The MX's policy: it takes mail for the inbound domains of organizations (live, inbound enabled, its MX record
 * verified) and records it as received email (docs/receiving.md); and it takes the return paths of Postline's
 * own live emails and the feedback address, reads what arrives there as a bounce (DSN or plain text) or a
 * complaint (ARF), and records it on the email it names (docs/bounces.md); and it takes the List-Unsubscribe
 * `mailto:` of broadcast emails, unsubscribing the contact (docs/broadcasts.md). Everything else is refused: never
 * an open relay.
 */
export function mxHooks(door: FrontDoor, services: Services) {
  const { config } = services;
  const returnPathPrefix = `${config.POSTLINE_RETURN_PATH_SUBDOMAIN.toLowerCase()}.`;
  const bounceDomain = installationBounceDomain(config);
  /** Return paths are on a sending domain's custom return path (`bounces.<domain>`) or the installation's. */
  const isReturnPathDomain = (address: string) => {
    const domain = domainOf(address.toLowerCase());
    return domain === bounceDomain || domain.startsWith(returnPathPrefix);
  };
  const feedback = feedbackAddress(config.POSTLINE_MX_HOST);
  const authenticate = inboundAuthenticator(config.DNS_SERVERS, door.hostname, door.log);
  const rspamd = rspamdScorer(config.RSPAMD_URL, door.log);
  const { blobs } = services;

  /** The live email a return path names, or null. */
  async function returnPathEmail(address: string) {
    const verp = parseVerp(address);
    if (!verp || !isReturnPathDomain(address)) return null;
    const { state } = await readEmail(services, verp.emailId);
    return state.exists && state.mode === 'live' ? verp.emailId : null;
  }

  /**
   * The live inbound domains, one per organization, that take mail for `address`: from memory until the
   * `domains` projection changes (projections/read-model-cache.ts).
   */
  async function inboundDomainsFor(address: string) {
    const name = domainOf(address).toLowerCase();
    const found = await services.caches.inboundDomains.get(name);
    return found.filter((d) => d.mode === 'live' && d.inboundVerified);
  }

  /** A broadcast email's List-Unsubscribe mailto (unsubscribe+<token>@<return path's domain>): its target, or null. */
  async function unsubscribeFor(address: string) {
    const token = unsubscribeTokenOf(address);
    if (!token || !isReturnPathDomain(address)) return null;
    return unsubscribeTarget(services, token);
  }

  const isUnsubscribeAddress = (address: string) => unsubscribeTokenOf(address) !== null;
  const isReportAddress = (address: string) =>
    address.toLowerCase() === feedback || parseVerp(address) !== null;

  async function onRcptTo(address: string, session: SMTPServerSession) {
    if (session.envelope.rcptTo.length >= MAX_RECIPIENTS)
      throw door.refuse(
        session,
        new SmtpReply('tooManyRecipients', `Too many recipients: at most ${MAX_RECIPIENTS}`),
      );
    if (address.toLowerCase() === feedback) return;
    if (isUnsubscribeAddress(address)) {
      if (await unsubscribeFor(address)) return;
      throw door.refuse(session, 'unknownReturnPath');
    }
    if (parseVerp(address)) {
      if (await returnPathEmail(address)) return;
      throw door.refuse(session, 'unknownReturnPath');
    }
    if ((await inboundDomainsFor(address)).length > 0) return;
    throw door.refuse(session, 'relayDenied');
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
    let recorded = false;
    if (report.kind === 'complaint') {
      const recipient = recipientOf(report.recipient);
      if (!recipient) return false;
      const r = await recordComplaint(services, meta, emailId, recipient);
      if (r.state.exists && r.state.recipients[recipient]?.status === 'complained') {
        await suppressForEmail(services, meta, {
          email: recipient,
          reason: 'complaint',
          sourceEmailId: emailId,
        });
        recorded = true;
      }
    } else if (report.kind === 'bounce') {
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
        // A transient status: the receiving side tries again; news, not a bounce.
        if (!bounced.status.startsWith('5')) {
          await recordDelayReport(services, meta, emailId, outcome);
          continue;
        }
        const r = await recordBounceReport(services, meta, emailId, { ...outcome, bounceType: 'hard' });
        if (r.state.exists && r.state.recipients[recipient]?.status === 'bounced') {
          await suppressForEmail(services, meta, {
            email: recipient,
            reason: 'hard_bounce',
            sourceEmailId: emailId,
          });
        }
      }
    }
    return recorded;
  }

  /**
   * The message is written to the blob store as it arrives, its MIME shape measured on the way, so that no
   * message is held whole in memory; one that breaks a rule is removed and refused. Then it is received for the
   * inbound domains, and read as a report for the return paths.
   */
  async function onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const args = (session.envelope.mailFrom || undefined)?.args || undefined;
    const blob = await blobs.writer(services.clock.now().getTime());
    const shape = new MimeShape();
    let refusal: ReplyName | undefined;
    try {
      const read = await readMessage(
        stream,
        String(args?.BODY ?? '').toUpperCase() === '8BITMIME',
        (chunk) => (shape.push(chunk).problem ? Promise.resolve() : blob.write(chunk)),
      );
      refusal = stream.sizeExceeded ? 'messageTooBig' : (read.problem ?? shape.problem);
    } catch (error) {
      await blob.abort();
      throw error;
    }
    if (refusal) {
      await blob.abort();
      throw door.refuse(session, refusal);
    }
    // Synced while the message is authenticated; nothing is recorded before it is on disk.
    const synced = blob.finish();
    synced.catch(() => {}); // awaited below
    const recipients = session.envelope.rcptTo.map((r) => r.address);
    const unsubscribes = recipients.filter(isUnsubscribeAddress);
    const reports = recipients.filter(isReportAddress);
    const inbound = recipients.filter((a) => !isReportAddress(a) && !isUnsubscribeAddress(a));
    // What the message says does not matter to an unsubscribe: that it was sent to the address is the request.
    for (const address of unsubscribes) {
      const target = await unsubscribeFor(address);
      if (target) await unsubscribeFrom(services, target);
    }
    if (inbound.length > 0) await receive(blob, synced, inbound, session);
    if (reports.length > 0) {
      await synced;
      await readReports(blob, inbound.length > 0, session);
    } else if (inbound.length === 0) {
      await synced;
      await blobs.delete(blob.key);
    }
    return '2.0.0 Ok: received';
  }

  /** Records the message for each organization whose inbound domains it was sent to. */
  async function receive(
    blob: BlobWriter,
    synced: Promise<string>,
    addresses: string[],
    session: SMTPServerSession,
  ) {
    const targets = new Map<string, InboundTarget>();
    for (const address of addresses) {
      for (const d of await inboundDomainsFor(address)) {
        const target = targets.get(d.orgId) ?? {
          orgId: d.orgId,
          mode: d.mode,
          domainId: d.id,
          domain: d.name,
          recipients: [],
        };
        target.recipients.push(address);
        targets.set(d.orgId, target);
      }
    }
    if (targets.size === 0) {
      await synced;
      // Inbound was turned off between RCPT and the end of DATA: the message is kept for an operator.
      door.log.warn(
        { blobKey: blob.key, recipients: addresses },
        'MX message for a domain no longer inbound',
      );
      return;
    }
    const mailFrom = (session.envelope.mailFrom || undefined)?.address ?? '';
    const helo = session.hostNameAppearsAs || session.remoteAddress;
    const arrival = { ip: session.remoteAddress, helo, mailFrom };
    const [, authentication, spamScore] = await Promise.all([
      synced,
      authenticate(blob.reader(), arrival),
      rspamd?.(blob.reader(), { ...arrival, rcptTo: addresses, hostname: door.hostname }) ?? null,
    ]);
    const { ids } = await receiveMessage(
      services,
      {
        rawKey: blob.key,
        size: blob.size,
        read: () => blob.reader(),
        mailFrom,
        remoteAddress: session.remoteAddress,
        helo,
        authentication,
        spamScore,
      },
      [...targets.values()],
      'mx',
    );
    door.log.info({ receivedEmailIds: ids, client: session.remoteAddress }, 'MX message received');
  }

  /**
   * Reads the message as a bounce or complaint for the emails its return paths name. Its stored copy is kept
   * when it matched nothing (for an operator to look at) or was received too; else it is removed.
   */
  async function readReports(blob: BlobWriter, received: boolean, session: SMTPServerSession) {
    const rawKey = blob.key;
    const report = await readReport(await buffer(blob.reader())).catch((): Report => ({ kind: 'other' }));
    const emailIds = new Set<string>();
    for (const { address } of session.envelope.rcptTo) {
      const emailId =
        parseVerp(address)?.emailId ?? (report.kind === 'other' ? undefined : report.originalEmailId);
      if (emailId) emailIds.add(emailId);
    }
    let recorded = false;
    for (const emailId of emailIds) recorded = (await apply(emailId, report)) || recorded;
    if (!recorded) {
      // Never an error for the sender: what matches nothing is kept for an operator to look at.
      door.log.warn(
        { blobKey: rawKey, kind: report.kind, emails: [...emailIds] },
        'MX message matched no email',
      );
    } else if (!received) await blobs.delete(rawKey);
  }

  return {
    onMailFrom(_address: SMTPServerAddress, _session: SMTPServerSession, callback: (err?: Error) => void) {
      callback();
    },
    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      answer(onRcptTo(address.address, session), callback, door.log, 'MX recipient not checked');
    },
    onData(
      stream: SMTPServerDataStream,
      session: SMTPServerSession,
      callback: (err: Error | null, message?: string) => void,
    ) {
      answer(onData(stream, session), callback, door.log, 'MX message not recorded');
    },
  };
}
