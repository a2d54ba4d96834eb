import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import type { Services } from '../platform/services.ts';
import { bounceReports } from './bounce-reports.ts';
import { dmarcReports } from './dmarc-reports.ts';
import { inbound } from './inbound.ts';
import { type SpooledMessage, storeArriving } from './mx-message.ts';
import { answer, type ReplyName, SmtpReply } from './replies.ts';
import { onReturnPathDomain } from './return-paths.ts';
import type { SmtpServers } from './smtp-server.ts';
import { unsubscribeMailto } from './unsubscribe-mailto.ts';

/** Recipients one message may have at the MX. */
const MAX_RECIPIENTS = 100;

/** Where the MX sends the recipients of one kind. */
interface Route {
  /** RCPT TO: null when mail for the address is taken now, else the refusal. */
  refusal(address: string): Promise<ReplyName | null>;
  /** DATA: handles the message for its recipients of this route; resolves with whether its stored copy is kept. */
  deliver(message: SpooledMessage, addresses: string[], session: SMTPServerSession): Promise<boolean>;
}

/**
 * The MX's routing: each recipient goes, by its address alone, to the List-Unsubscribe `mailto:` of broadcast
 * emails (`unsubscribe+<token>@` a return-path domain), to a domain's DMARC report address
 * (`dmarc+<domain id>@` the bounce domain), to the bounce and complaint reports (`b+<email id>@` a return-path
 * domain, `fbl@` the MX host), or to inbound receipt (anything else, refused unless on an organization's inbound
 * domain): never an open relay. A route claims its local part on its own domains only, so that the same local
 * part on a customer's inbound domain is that customer's mail.
 */
export function mxHooks(servers: SmtpServers, services: Services) {
  const returnPath = onReturnPathDomain(services.config);
  const blobs = services.blobs;
  const unsubscribe = unsubscribeMailto(services, returnPath);
  const reports = bounceReports(servers, services, returnPath);
  const dmarc = dmarcReports(servers, services);
  const received = inbound(servers, services);
  const routeOf = (address: string): Route =>
    unsubscribe.takes(address)
      ? unsubscribe
      : dmarc.takes(address)
        ? dmarc
        : reports.takes(address)
          ? reports
          : received;

  async function onRcptTo(address: string, session: SMTPServerSession) {
    if (session.envelope.rcptTo.length >= MAX_RECIPIENTS)
      throw servers.refuse(
        session,
        new SmtpReply('tooManyRecipients', `Too many recipients: at most ${MAX_RECIPIENTS}`),
      );
    const refusal = await routeOf(address).refusal(address);
    if (refusal) throw servers.refuse(session, refusal);
  }

  /** The message is stored, then handled by each route for its recipients; removed unless one keeps it. */
  async function onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const message = await storeArriving(stream, session, {
      blobs,
      clock: services.clock,
      refuse: (reply) => servers.refuse(session, reply),
    });
    const recipients = session.envelope.rcptTo.map((r) => r.address);
    let kept = false;
    for (const route of [unsubscribe, dmarc, received, reports] satisfies Route[]) {
      const addresses = recipients.filter((a) => routeOf(a) === route);
      if (addresses.length > 0) kept = (await route.deliver(message, addresses, session)) || kept;
    }
    if (!kept) {
      await message.staged;
      await blobs.delete(message.blob.key);
    }
    return '2.0.0 Ok: received';
  }

  return {
    onMailFrom(_address: SMTPServerAddress, _session: SMTPServerSession, callback: (err?: Error) => void) {
      callback();
    },
    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      answer(onRcptTo(address.address, session), callback, servers.log, 'MX recipient not checked');
    },
    onData(
      stream: SMTPServerDataStream,
      session: SMTPServerSession,
      callback: (err: Error | null, message?: string) => void,
    ) {
      answer(onData(stream, session), callback, servers.log, 'MX message not recorded');
    },
  };
}
