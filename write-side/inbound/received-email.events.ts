import type { Mode } from '../../platform/eventstore/types.ts';

export interface MailAddress {
  email: string;
  name: string | null;
}

/** One check's verdict (`pass`, `fail`, `softfail`, `neutral`, `none`, `temperror`, `permerror`, …) and why. */
export interface AuthVerdict {
  result: string;
  detail: string | null;
}

/** SPF, DKIM, DMARC and ARC as the MX found them; a message injected in test mode has `none` for each. */
export interface Authentication {
  spf: AuthVerdict;
  dkim: AuthVerdict;
  dmarc: AuthVerdict;
  arc: AuthVerdict;
}

/** What a received email's content blob holds: the bodies and headers, deleted with the raw message. */
export interface ReceivedContent {
  text: string | null;
  html: string | null;
  headers: Record<string, string | string[]>;
}

export interface ReceivedAttachment {
  attachmentId: string;
  filename: string;
  contentType: string;
  contentId: string | null;
  size: number;
  blobKey: string;
}

export type ReceivedEmailEvent =
  | {
      type: 'InboundEmailReceived';
      data: {
        receivedEmailId: string;
        orgId: string;
        mode: Mode;
        /** The inbound domain that took it; null for a message injected in test mode. */
        domainId: string | null;
        domain: string | null;
        envelope: { mailFrom: string; rcptTo: string[]; remoteAddress: string | null; helo: string | null };
        from: MailAddress | null;
        to: MailAddress[];
        cc: MailAddress[];
        replyTo: MailAddress[];
        subject: string | null;
        messageId: string | null;
        inReplyTo: string | null;
        /** The whole message as it arrived. */
        rawKey: string;
        size: number;
        /** Text, html and headers as parsed (a JSON blob): deleted with the raw message after the retention. */
        contentKey: string | null;
        attachments: ReceivedAttachment[];
        authentication: Authentication;
        spamScore: number;
        isSpam: boolean;
        /** Why the message could not be parsed, when it could not: it is kept raw all the same. */
        parseError: string | null;
        receivedAt: string;
      };
    }
  | {
      /** The retention ended: the raw message, its content and attachments are deleted; the metadata stays. */
      type: 'ReceivedEmailPurged';
      data: { receivedEmailId: string; purgedAt: string };
    };

export type InboundEmailReceived = Extract<ReceivedEmailEvent, { type: 'InboundEmailReceived' }>;

export const receivedEmailStream = (receivedEmailId: string) => `inbound-${receivedEmailId}`;
