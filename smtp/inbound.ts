import type { SMTPServerSession } from 'smtp-server';
import { domainOf } from '../domain/emails/addresses.ts';
import type { Services } from '../platform/services.ts';
import { receiveMessage } from '../write-side/received-emails/received-email.commands.ts';
import type { InboundTarget } from '../write-side/received-emails/received-message.ts';
import type { SpooledMessage } from './mx-message.ts';
import type { ReplyName } from './replies.ts';
import { rspamdScorer } from './rspamd.ts';
import { inboundAuthenticator } from './sender-authentication.ts';
import type { SmtpServers } from './smtp-server.ts';

/**
 * Inbound receipt (docs/receiving.md): mail for the inbound domains of organizations (live, inbound enabled, its MX
 * record verified), authenticated (SPF, DKIM, DMARC, ARC), scored for spam, and recorded as received email for
 * each organization it was sent to.
 */
export function inbound(servers: SmtpServers, services: Services) {
  const { config } = services;
  const authenticate = inboundAuthenticator(config.DNS_SERVERS, servers.hostname, servers.log);
  const rspamd = rspamdScorer(config.RSPAMD_URL, servers.log);

  /**
   * The live inbound domains, one per organization, that take mail for `address`: from memory until the
   * `domains` projection changes (projections/read-model-cache.ts).
   */
  async function inboundDomainsFor(address: string) {
    const name = domainOf(address).toLowerCase();
    const found = await services.caches.inboundDomains.get(name);
    return found.filter((d) => d.mode === 'live' && d.inboundVerified);
  }

  /** The organizations whose inbound domains the addresses are on, each with its recipients. */
  async function targetsOf(addresses: string[]): Promise<InboundTarget[]> {
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
    return [...targets.values()];
  }

  return {
    async refusal(address: string): Promise<ReplyName | null> {
      return (await inboundDomainsFor(address)).length > 0 ? null : 'relayDenied';
    },

    /** Records the message for each organization it was sent to; its stored copy is always kept. */
    async deliver(message: SpooledMessage, addresses: string[], session: SMTPServerSession) {
      const blob = message.blob;
      const targets = await targetsOf(addresses);
      if (targets.length === 0) {
        await message.keep();
        // Inbound was turned off between RCPT and the end of DATA: the message is kept for an operator.
        servers.log.warn(
          { blobKey: blob.key, recipients: addresses },
          'MX message for a domain no longer inbound',
        );
        return true;
      }
      const mailFrom = (session.envelope.mailFrom || undefined)?.address ?? '';
      const helo = session.hostNameAppearsAs || session.remoteAddress;
      const arrival = { ip: session.remoteAddress, helo, mailFrom };
      // Checked while it is parsed; recorded once checked, its row committed with the first record.
      const checks = Promise.all([
        authenticate(blob.reader(), arrival),
        rspamd?.(blob.reader(), { ...arrival, rcptTo: addresses, hostname: servers.hostname }) ?? null,
      ]).then(([authentication, spamScore]) => ({ authentication, spamScore }));
      const { ids, already } = await receiveMessage(
        services,
        {
          rawKey: blob.key,
          rows: message.rows(),
          size: blob.size,
          read: () => blob.reader(),
          mailFrom,
          retryable: true,
          remoteAddress: session.remoteAddress,
          helo,
          checks,
        },
        targets,
        'mx',
      );
      if (already.length < ids.length) message.committed();
      servers.log.info(
        { receivedEmailIds: ids, recordedBefore: already, client: session.remoteAddress },
        'MX message received',
      );
      return true;
    },
  };
}
