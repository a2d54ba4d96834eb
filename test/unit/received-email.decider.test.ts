import { describe, expect, it } from 'vitest';
import {
  INBOUND_RETRY_WINDOW_MS,
  inboundMessageDecider,
} from '../../domain/received-emails/inbound-message.decider.ts';
import { receivedEmailDecider } from '../../domain/received-emails/received-email.decider.ts';
import type {
  InboundMessageEvent,
  ReceivedEmailEvent,
} from '../../domain/received-emails/received-email.events.ts';
import { receivedEmail as email } from '../fixtures/received-email.ts';
import { spec } from '../support/given-when-then.ts';

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
  it('knows every blob it must delete: raw message, content and attachments; not the headers, which it keeps', () => {
    const state = receivedEmailDecider.evolve(receivedEmailDecider.initialState, received);
    expect(state).toEqual({
      exists: true,
      receivedEmailId: 'in_1',
      rawKey: 'blob_raw',
      receivedAt: email.receivedAt,
      blobKeys: ['blob_raw', 'blob_content', 'blob_att'],
      contentKey: 'blob_content',
      headersKey: 'blob_headers',
      purged: false,
    });
  });
});

describe('received email decider, a message recorded with its headers in its content blob', () => {
  const { headersKey: _, ...data } = email;
  const receivedBefore: ReceivedEmailEvent = { type: 'InboundEmailReceived', data };
  const keep = {
    type: 'KeepReceivedEmailHeaders' as const,
    receivedEmailId: 'in_1',
    headersKey: 'blob_kept',
  };
  const kept: ReceivedEmailEvent = {
    type: 'ReceivedEmailHeadersKept',
    data: { receivedEmailId: 'in_1', headersKey: 'blob_kept' },
  };

  it('keeps its headers apart', () =>
    spec(receivedEmailDecider).given([receivedBefore]).when(keep).then([kept]));
  it('keeps them once', () => spec(receivedEmailDecider).given([receivedBefore, kept]).when(keep).then([]));
  it('has nothing to keep for a message whose headers have a blob of their own', () =>
    spec(receivedEmailDecider).given([received]).when(keep).then([]));
  it('cannot keep them once its content is purged', () =>
    spec(receivedEmailDecider).given([receivedBefore, purged]).when(keep).then([]));
  it('an unknown received email is not found', () =>
    spec(receivedEmailDecider).given([]).when(keep).thenFails('not_found'));
  it('still purges its content (and not the headers blob it kept)', () => {
    spec(receivedEmailDecider).given([receivedBefore, kept]).when(purge).then([purged]);
    const state = [receivedBefore, kept].reduce(
      receivedEmailDecider.evolve,
      receivedEmailDecider.initialState,
    );
    expect(state).toMatchObject({
      headersKey: 'blob_kept',
      blobKeys: ['blob_raw', 'blob_content', 'blob_att'],
    });
  });
});

describe('inbound message decider: the id a message that arrived for an organization is recorded as', () => {
  const first = '2026-05-01T10:00:00.000Z';
  const claimed: InboundMessageEvent = {
    type: 'InboundMessageClaimed',
    data: { receivedEmailId: 'in_first', claimedAt: first },
  };
  const claim = (receivedEmailId: string, at: string) => ({
    type: 'ClaimInboundMessage' as const,
    receivedEmailId,
    at,
  });
  const later = (ms: number) => new Date(Date.parse(first) + ms).toISOString();

  it('claims the first attempt’s id', () =>
    spec(inboundMessageDecider).given([]).when(claim('in_first', first)).then([claimed]));
  it('keeps it for a retry: nothing more is claimed, and the state names the first id', () => {
    spec(inboundMessageDecider)
      .given([claimed])
      .when(claim('in_retry', later(INBOUND_RETRY_WINDOW_MS - 1)))
      .then([]);
    expect(inboundMessageDecider.evolve(inboundMessageDecider.initialState, claimed)).toEqual({
      receivedEmailId: 'in_first',
      claimedAt: first,
    });
  });
  it('claims a new id for the same message once senders no longer retry it: a new message', () => {
    const again: InboundMessageEvent = {
      type: 'InboundMessageClaimed',
      data: { receivedEmailId: 'in_later', claimedAt: later(INBOUND_RETRY_WINDOW_MS) },
    };
    spec(inboundMessageDecider)
      .given([claimed])
      .when(claim('in_later', later(INBOUND_RETRY_WINDOW_MS)))
      .then([again]);
    expect([claimed, again].reduce(inboundMessageDecider.evolve, null)).toMatchObject({
      receivedEmailId: 'in_later',
    });
  });
});
