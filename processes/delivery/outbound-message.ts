import { customReturnPathVerified, envelopeDomain } from '../../domain/domains/dns-records.ts';
import { type EmailContent, messageIdOf } from '../../domain/emails/email.events.ts';
import { textFromHtml } from '../../domain/emails/text-from-html.ts';
import { addTracking } from '../../domain/emails/tracking.ts';
import { verpAddress } from '../../domain/emails/verp.ts';
import type { SecretBox } from '../../platform/crypto.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { type DomainRow, findDomainById } from '../../read-side/domains/domains.queries.ts';
import type { DkimKey, OutboundMessage } from './mta/message.ts';

/** A sending domain with its DKIM key opened, once for the many emails that share it. */
export type SendingDomain = { row: DomainRow; dkim: DkimKey; dkimEd25519?: DkimKey };

export const sendingDomain = (row: DomainRow, secrets: SecretBox): SendingDomain => ({
  row,
  dkim: {
    domainName: row.name,
    keySelector: row.dkim_selector,
    privateKey: secrets.open(row.sealed_dkim_private_key),
  },
  ...(row.ed25519_dkim_selector &&
    row.sealed_ed25519_dkim_private_key && {
      dkimEd25519: {
        domainName: row.name,
        keySelector: row.ed25519_dkim_selector,
        privateKey: secrets.open(row.sealed_ed25519_dkim_private_key),
      },
    }),
});

/** Sending domains looked up once per claimed batch (many emails share one), by id. */
export class SendingDomains {
  readonly #services: Pick<Services, 'db' | 'secrets'>;
  readonly #domains = new Map<string, Promise<SendingDomain | null>>();

  constructor(services: Pick<Services, 'db' | 'secrets'>) {
    this.#services = services;
  }

  /** The email's sending domain with its DKIM key opened; null when it is gone. */
  of(content: EmailContent, tenant: { orgId: string; mode: Mode }): Promise<SendingDomain | null> {
    const id = content.domainId;
    if (!id) return Promise.resolve(null);
    let domain = this.#domains.get(id);
    if (!domain) {
      const { db, secrets } = this.#services;
      domain = findDomainById(db, tenant, id).then((row) => row && sendingDomain(row, secrets));
      this.#domains.set(id, domain);
    }
    return domain;
  }
}

const trackingCnameVerified = (domain: DomainRow) =>
  domain.dns_records.some((r) => r.purpose === 'tracking' && r.status === 'verified');

/**
 * The message as the MTA sends it: the accepted content, attachments read back from the blob store, tracking
 * when the domain has it on, the VERP return path (on the domain's custom return path once its records verify,
 * else on the installation's bounce domain), and its DKIM key. An email with html and no text goes with a text part
 * made from its html (as Resend's do; `text: ""` sends none). A message submitted over SMTP goes as it was
 * submitted: no tracking or text is added to it.
 */
export async function buildOutboundMessage(
  services: Services,
  content: EmailContent,
  { row: domain, dkim, dkimEd25519 }: SendingDomain,
): Promise<OutboundMessage> {
  const blobs = services.blobs;
  const tokens = services.tokens.tracking;
  const claim = { emailId: content.emailId, orgId: content.orgId, mode: content.mode };
  const html =
    content.html && !content.raw && (domain.open_tracking || domain.click_tracking)
      ? addTracking(content.html, tokens, claim, {
          opens: domain.open_tracking,
          clicks: domain.click_tracking,
          // The domain's own tracking name once its CNAME is verified: links that name the sender's domain.
          ...(trackingCnameVerified(domain) && { host: domain.tracking_domain }),
        })
      : content.html;
  // From the html as accepted: links in the text part are not tracked.
  const text = content.text ?? (content.html && !content.raw ? textFromHtml(content.html) : null);
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
    ...(text && { text }),
    headers: content.headers,
    attachments: await Promise.all(
      (content.raw ? [] : content.attachments).map(async (a) => ({
        filename: a.filename,
        contentType: a.contentType,
        ...(a.contentId !== undefined && { contentId: a.contentId }),
        content: await blobs.get(a.blobKey),
      })),
    ),
    ...(content.raw && { raw: await blobs.get(content.raw.blobKey) }),
    envelopeFrom: verpAddress(
      content.emailId,
      envelopeDomain(
        {
          returnPathDomain: domain.return_path_domain,
          customReturnPath: customReturnPathVerified(domain.dns_records),
        },
        services.config,
      ),
    ),
    dkim,
    ...(dkimEd25519 && { dkimEd25519 }),
  };
}
