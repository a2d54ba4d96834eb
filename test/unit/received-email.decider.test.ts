import { describe, expect, it } from 'vitest';
import { receivedEmailDecider } from '../../write-side/inbound/received-email.decider.ts';
import type {
  InboundEmailReceived,
  ReceivedEmailEvent,
} from '../../write-side/inbound/received-email.events.ts';
import { spec } from '../support/given-when-then.ts';

const none = { result: 'none', detail: null };
const email: InboundEmailReceived['data'] = {
  receivedEmailId: 'in_1',
  orgId: 'org_1',
  mode: 'live',
  domainId: 'dom_1',
  domain: 'acme.test',
  envelope: {
    mailFrom: 'ann@remote.test',
    rcptTo: ['support@acme.test'],
    remoteAddress: '192.0.2.7',
    helo: 'mx.remote.test',
  },
  from: { email: 'ann@remote.test', name: 'Ann' },
  to: [{ email: 'support@acme.test', name: null }],
  cc: [],
  replyTo: [],
  subject: 'Help',
  messageId: '<1@remote.test>',
  inReplyTo: null,
  rawKey: 'blob_raw',
  size: 1234,
  contentKey: 'blob_content',
  attachments: [
    {
      attachmentId: 'att_1',
      filename: 'a.pdf',
      contentType: 'application/pdf',
      contentId: null,
      size: 10,
      blobKey: 'blob_att',
    },
  ],
  authentication: { spf: none, dkim: none, dmarc: none, arc: none },
  spamScore: 1,
  isSpam: false,
  parseError: null,
  receivedAt: '2026-05-01T10:00:00.000Z',
};
const received: ReceivedEmailEvent = { type: 'InboundEmailReceived', data: email };
const purged: ReceivedEmailEvent = {
  type: 'ReceivedEmailPurged',
  data: { receivedEmailId: 'in_1', purgedAt: '2026-05-31T10:00:00.000Z' },
};
const purge = { type: 'PurgeReceivedEmail' as const, receivedEmailId: 'in_1', at: purged.data.purgedAt };

describe('received email decider', () => {
  it('records a received email', () =>
    spec(receivedEmailDecider).given([]).when({ type: 'RecordReceivedEmail', email }).then([received]));
  it('records it once: a retried command appends nothing', () =>
    spec(receivedEmailDecider).given([received]).when({ type: 'RecordReceivedEmail', email }).then([]));
  it('purges its content when the retention ends', () =>
    spec(receivedEmailDecider).given([received]).when(purge).then([purged]));
  it('purges once', () => spec(receivedEmailDecider).given([received, purged]).when(purge).then([]));
  it('an unknown received email is not found', () =>
    spec(receivedEmailDecider).given([]).when(purge).thenFails('not_found'));
  it('knows every blob it must delete: raw message, content and attachments', () => {
    const state = receivedEmailDecider.evolve(receivedEmailDecider.initialState, received);
    expect(state).toEqual({
      exists: true,
      receivedEmailId: 'in_1',
      blobKeys: ['blob_raw', 'blob_content', 'blob_att'],
      purged: false,
    });
  });
});
