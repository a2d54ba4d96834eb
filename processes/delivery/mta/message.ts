import type { EmailContent } from '../../../domain/emails/email.events.ts';

/** The message the MTA sends, as the delivery process hands it over (compose.ts makes its bytes). */

export interface OutboundAttachment {
  filename: string;
  contentType: string;
  /** Set for inline images: referenced from the html as `cid:<contentId>`. */
  contentId?: string;
  content: Buffer;
}

export interface DkimKey {
  domainName: string;
  keySelector: string;
  /** PEM private key. */
  privateKey: string;
}

/** The email's addresses, subject and headers as accepted; `bcc` is envelope only, never written to a header. */
export interface OutboundMessage
  extends Pick<EmailContent, 'from' | 'to' | 'cc' | 'bcc' | 'replyTo' | 'subject' | 'headers'> {
  /** `<...@domain>`, stable for the email: the same input gives the same header on every attempt. */
  messageId: string;
  date: Date;
  html?: string;
  text?: string;
  attachments: OutboundAttachment[];
  /**
   * A message submitted over SMTP: sent as these bytes (only DKIM-signed); the fields above it are not used to
   * compose it then.
   */
  raw?: Buffer;
  /** The VERP return path (`MAIL FROM`), see `verpAddress()`. */
  envelopeFrom: string;
  dkim: DkimKey | null;
  /** A second signature beside RSA (RFC 8463), once the domain's Ed25519 record verified. */
  dkimEd25519?: DkimKey;
}

/** What became of one recipient of a send. */
export interface RecipientOutcome {
  recipient: string;
  result: 'delivered' | 'deferred' | 'bounced';
  /**
   * The SMTP reply code. Set when a server answered the recipient, and for bounces decided locally from DNS
   * (556 null MX, 550 NXDOMAIN or no address; `mx` is then absent). Absent for refused connections, time-outs
   * and DNS failures, which are deferrals.
   */
  smtpCode?: number;
  smtpResponse: string;
  /** The host that answered (MX host name, or the smarthost). */
  mx?: string;
  /** Whether the transaction ran over TLS. */
  tls?: boolean;
  /**
   * False when no server was asked, only a connection waited for: the shaping group's connections were all in
   * use until the connection time-out, or the pool had none free within the send's time limit. Such a deferral
   * does not count as an attempt (delivery-attempts.ts).
   */
  attempted?: false;
}

/** Every recipient deferred with the same answer; `more`: what else each outcome says. */
export const deferredAll = (
  recipients: readonly string[],
  smtpResponse: string,
  more: Partial<RecipientOutcome> = {},
): RecipientOutcome[] =>
  recipients.map((recipient) => ({ recipient, result: 'deferred', smtpResponse, ...more }));
