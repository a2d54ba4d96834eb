import { describe, expect, it } from 'vitest';
import { queueDecider, queueDestination } from '../../domain/queue/queue.decider.ts';
import { type QueueEvent, queueStream } from '../../domain/queue/queue.events.ts';
import { spec } from '../support/given-when-then.ts';

const at = '2026-01-01T10:00:00.000Z';
const target = { destination: 'Gmail.COM.', orgId: 'org_1', at };
const pause = {
  type: 'PauseDelivery' as const,
  ...target,
  until: '2026-01-01T12:00:00+00:00',
  reason: 'blocked by Spamhaus',
};
const paused: QueueEvent = {
  type: 'DeliveryPaused',
  data: {
    destination: 'gmail.com',
    orgId: 'org_1',
    until: '2026-01-01T12:00:00.000Z',
    reason: 'blocked by Spamhaus',
    at,
  },
};

describe('queue decider', () => {
  it('pauses a destination, normalized, until a time', () =>
    spec(queueDecider).given([]).when(pause).then([paused]));

  it('pauses every organization with orgId null', () =>
    spec(queueDecider)
      .given([])
      .when({ ...pause, orgId: null, reason: null })
      .then([{ type: 'DeliveryPaused', data: { ...paused.data, orgId: null, reason: null } }]));

  it('pausing again moves the end', () =>
    spec(queueDecider)
      .given([paused])
      .when({ ...pause, until: '2026-01-01T18:00:00Z' })
      .then([{ type: 'DeliveryPaused', data: { ...paused.data, until: '2026-01-01T18:00:00.000Z' } }]));

  it('refuses a pause that ends now or before, too far ahead, or at no time', () => {
    spec(queueDecider)
      .given([])
      .when({ ...pause, until: at })
      .thenFails('validation_error', /future/);
    spec(queueDecider)
      .given([])
      .when({ ...pause, until: '2026-03-01T00:00:00Z' })
      .thenFails('validation_error', /30 days/);
    spec(queueDecider)
      .given([])
      .when({ ...pause, until: 'tomorrow' })
      .thenFails('validation_error', /until/);
  });

  it('refuses a destination that is no domain name', () => {
    for (const destination of ['localhost', '127.0.0.1', 'a b.com', 'gmail.com/x', ''])
      spec(queueDecider)
        .given([])
        .when({ ...pause, destination })
        .thenFails('validation_error', /`destination`/);
  });

  it('resumes a pause in force', () =>
    spec(queueDecider)
      .given([paused])
      .when({ type: 'ResumeDelivery', ...target, at: '2026-01-01T11:00:00.000Z' })
      .then([
        {
          type: 'DeliveryResumed',
          data: { destination: 'gmail.com', orgId: 'org_1', at: '2026-01-01T11:00:00.000Z' },
        },
      ]));

  it('resuming without a pause, or after it ended on its own, records nothing', () => {
    spec(queueDecider)
      .given([])
      .when({ type: 'ResumeDelivery', ...target })
      .then([]);
    spec(queueDecider)
      .given([paused])
      .when({ type: 'ResumeDelivery', ...target, at: '2026-01-01T12:00:00.000Z' })
      .then([]);
    spec(queueDecider)
      .given([paused, { type: 'DeliveryResumed', data: { destination: 'gmail.com', orgId: 'org_1', at } }])
      .when({ type: 'ResumeDelivery', ...target })
      .then([]);
  });

  it('records a retry and a give-up request, paused or not', () => {
    spec(queueDecider)
      .given([])
      .when({ type: 'RetryDelivery', ...target })
      .then([{ type: 'DeliveryRetryRequested', data: { destination: 'gmail.com', orgId: 'org_1', at } }]);
    spec(queueDecider)
      .given([paused])
      .when({ type: 'GiveUpDelivery', ...target, orgId: null })
      .then([{ type: 'DeliveryGiveUpRequested', data: { destination: 'gmail.com', orgId: null, at } }]);
  });

  it('names a stream per scope and destination', () => {
    expect(queueStream('org_1', 'gmail.com')).toBe('queue-org_1-gmail.com');
    expect(queueStream(null, 'gmail.com')).toBe('queue-all-gmail.com');
    expect(queueDestination(' Bücher.Example ')).toBe('xn--bcher-kva.example');
  });
});
