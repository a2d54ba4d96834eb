import { verpAddress } from '../../domain/emails/verp.ts';
import type { OutboundMessage } from '../../processes/delivery/mta/message.ts';

let seq = 0;

/** A plain text message from sender.test as the delivery process hands it to the MTA (no DKIM key unless given). */
export function outboundMessage(over: Partial<OutboundMessage> = {}): OutboundMessage {
  const id = `em_01test${++seq}`;
  return {
    messageId: `<${id}@sender.test>`,
    date: new Date('2026-03-01T10:00:00Z'),
    from: 'Acme <hello@sender.test>',
    to: [],
    cc: [],
    bcc: [],
    replyTo: [],
    subject: 'Test',
    text: 'Hello',
    headers: {},
    attachments: [],
    envelopeFrom: verpAddress(id, 'bounces.sender.test'),
    dkim: null,
    ...over,
  };
}
