import type { Mode } from '../../platform/eventstore/types.ts';

export interface MailAddress {
  email: string;
  name: string | null;
}

/**
 * One check's verdict (`pass`, `fail`, `softfail`, `neutral`, `none`, `policy`, `temperror`, `permerror`, …)
 * and why.
 */
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

/** What a received email's content blob holds: the bodies, deleted with the raw message. */
export interface ReceivedContent {
  text: string | null;
  html: string | null;
  /**
   * The headers, in the content blobs of messages recorded before the headers had a blob of their own
   * (`headersKey`): lower-case names, a repeated header's values as a list.
   */
  headers?: Record<string, string | string[]>;
}

/** One header line of a received message: its name in lower case, its value unfolded (decoded where it is text). */
export interface ReceivedHeader {
  name: string;
  value: string;
}

/** What a received email's headers blob holds: every header in the order of the message. Kept after the retention. */
export interface ReceivedHeaders {
  headers: ReceivedHeader[];
}

export interface ReceivedAttachment {
  attachmentId: string;
  filename: string;
  contentType: string;
  /**
   * The charset its Content-Type names (lower case), served with its download so that text is read as it was
   * written; absent when none is named, and from events recorded before it was kept.
   */
  charset?: string | null;
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
        /** Text and html as parsed (a JSON blob): deleted with the raw message after the retention. */
        contentKey: string | null;
        /**
         * The headers as parsed (a JSON blob, `ReceivedHeaders`): metadata, kept after the retention. Null when the
         * message could not be parsed; absent from events recorded before the headers had a blob of their own
         * (their content blob holds them, until `ReceivedEmailHeadersKept`).
         */
        headersKey?: string | null;
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
      /**
       * The headers of a message recorded with them in its content blob were copied into a blob of their own, so
       * that they outlive the content (the retention does this before it deletes the content).
       */
      type: 'ReceivedEmailHeadersKept';
      data: { receivedEmailId: string; headersKey: string };
    }
  | {
      /** The retention ended: the raw message, its content and attachments are deleted; the metadata stays. */
      type: 'ReceivedEmailPurged';
      data: { receivedEmailId: string; purgedAt: string };
    };

export type InboundEmailReceived = Extract<ReceivedEmailEvent, { type: 'InboundEmailReceived' }>;

export const receivedEmailStream = (receivedEmailId: string) => `inbound-${receivedEmailId}`;

/**
 * A message that arrived at the MX, as one organization received it: the id of its received email, chosen by the
 * first attempt to record it, so that the sender's retry of the same message (after a 451) finds it recorded
 * instead of recording it again (docs/receiving.md, "Retries"). Stream `inboundmessage-<key>`, the key a SHA-256
 * of the organization, the mode, the envelope and the raw bytes.
 */
export type InboundMessageEvent = {
  type: 'InboundMessageClaimed';
  data: { receivedEmailId: string; claimedAt: string };
};

export const inboundMessageStream = (key: string) => `inboundmessage-${key}`;

/**
 * The headers of a content blob of the first format (`ReceivedContent.headers`: a map, a repeated header's values
 * as a list) as a list: by name in the order each first appeared, a repeated header's values in their order (how
 * its lines were interleaved with other headers was not kept).
 */
export const headerListOfMap = (map: Record<string, string | string[]>): ReceivedHeader[] =>
  Object.entries(map).flatMap(([name, values]) =>
    (Array.isArray(values) ? values : [values]).map((value) => ({ name, value })),
  );
