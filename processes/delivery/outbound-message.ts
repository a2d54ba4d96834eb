import { blobStoreFor } from '../../platform/blob-store.ts';
import type { SecretBox } from '../../platform/crypto.ts';
import type { Services } from '../../platform/services.ts';
import type { DomainRow } from '../../read-side/domains/queries.ts';
import type { EmailContent } from '../../write-side/emails/events.ts';
import { addTracking, TrackingTokens } from '../../write-side/emails/tracking.ts';
import { type DkimKey, type OutboundMessage, verpAddress } from './mta/outbound.ts';

const tokensByConfig = new WeakMap<object, TrackingTokens>();

/** Stable for the email, so every attempt (and a replay after a crash) carries the same Message-ID. */
export const messageIdOf = (content: Pick<EmailContent, 'emailId' | 'domainName'>) =>
  `<${content.emailId}@${content.domainName}>`;

/** A sending domain with its DKIM key opened, once for the many emails that share it. */
export type SendingDomain = { row: DomainRow; dkim: DkimKey };

export const sendingDomain = (row: DomainRow, secrets: SecretBox): SendingDomain => ({
  row,
  dkim: {
    domainName: row.name,
    keySelector: row.dkim_selector,
    privateKey: secrets.open(row.sealed_dkim_private_key),
  },
});

/**
 * The message as the MTA sends it: the accepted content, attachments read back from the blob store, tracking
 * when the domain has it on, the VERP return path on the domain's return-path subdomain, and its DKIM key.
 */
export async function buildOutboundMessage(
  services: Services,
  content: EmailContent,
  { row: domain, dkim }: SendingDomain,
): Promise<OutboundMessage> {
  const blobs = blobStoreFor(services.config);
  let tokens = tokensByConfig.get(services.config);
  if (!tokens) {
    tokens = TrackingTokens.fromConfig(services.config);
    tokensByConfig.set(services.config, tokens);
  }
  const claim = { emailId: content.emailId, orgId: content.orgId, mode: content.mode };
  const html =
    content.html && (domain.open_tracking || domain.click_tracking)
      ? addTracking(content.html, tokens, claim, {
          opens: domain.open_tracking,
          clicks: domain.click_tracking,
        })
      : content.html;
  return {
    messageId: messageIdOf(content),
    date: new Date(content.createdAt),
    from: content.from,
    to: content.to,
    cc: content.cc,
    bcc: content.bcc,
    replyTo: content.replyTo,
    subject: content.subject,
    ...(html !== null && { html }),
    ...(content.text !== null && { text: content.text }),
    headers: content.headers,
    attachments: await Promise.all(
      content.attachments.map(async (a) => ({
        filename: a.filename,
        contentType: a.contentType,
        ...(a.contentId !== undefined && { contentId: a.contentId }),
        content: await blobs.get(a.blobKey),
      })),
    ),
    envelopeFrom: verpAddress(content.emailId, domain.return_path_domain),
    dkim,
  };
}
