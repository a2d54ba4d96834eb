import { describe, it } from 'vitest';
import { idempotencyDecider } from '../../platform/idempotency/idempotency-decider.ts';
import type { IdempotencyEvent } from '../../platform/idempotency/idempotency-events.ts';
import { spec } from '../support/given-when-then.ts';

const claim = (at: string, attempt: string) => ({
  type: 'Claim' as const,
  hash: 'h',
  at,
  ids: [`em_${attempt}`],
  attempt,
  leaseMs: 60_000,
  windowMs: 24 * 3600_000,
});
const claimedBy = (attempt: string, at = '2026-03-01T00:00:00.000Z'): IdempotencyEvent => ({
  type: 'IdempotencyKeyClaimed',
  data: { requestHash: 'h', claimedAt: at, ids: ['em_a1'], attempt },
});
const released = (attempt: string): IdempotencyEvent => ({
  type: 'IdempotencyKeyReleased',
  data: { attempt },
});

describe('Idempotency-Key decider', () => {
  it('claims a new key for the attempt', () =>
    spec(idempotencyDecider)
      .given([])
      .when(claim('2026-03-01T00:00:00.000Z', 'a1'))
      .then([claimedBy('a1')]));

  it('refuses a claim while another attempt holds the key within its lease', () =>
    spec(idempotencyDecider)
      .given([claimedBy('a1')])
      .when(claim('2026-03-01T00:00:30.000Z', 'a2'))
      .thenFails('idempotency_request_in_flight'));

  it('lets the attempt that holds the key release it', () =>
    spec(idempotencyDecider)
      .given([claimedBy('a1')])
      .when({ type: 'Release', attempt: 'a1' })
      .then([released('a1')]));

  it('claims a released key again at once, on the ids of the first claim, for the new attempt', () =>
    spec(idempotencyDecider)
      .given([claimedBy('a1'), released('a1')])
      .when(claim('2026-03-01T00:00:01.000Z', 'a2'))
      .then([
        {
          type: 'IdempotencyKeyClaimed',
          data: {
            requestHash: 'h',
            claimedAt: '2026-03-01T00:00:01.000Z',
            ids: ['em_a1'],
            attempt: 'a2',
            resumed: true,
          },
        },
      ]));

  it('ignores a release written late for an attempt whose claim was taken over', () =>
    spec(idempotencyDecider)
      .given([claimedBy('a1'), claimedBy('a2', '2026-03-01T00:01:01.000Z')])
      .when({ type: 'Release', attempt: 'a1' })
      .then([]));

  it('takes a retry whose body hashes, as earlier versions hashed it, to a claim such a version made', () =>
    spec(idempotencyDecider)
      .given([
        {
          type: 'IdempotentRequestCompleted',
          data: {
            requestHash: 'as-written',
            claimedAt: '2026-03-01T00:00:00.000Z',
            reply: { status: 200, body: {} },
          },
        },
      ])
      .when({ ...claim('2026-03-01T00:00:30.000Z', 'a2'), hash: 'canonical', legacyHash: 'as-written' })
      .then([]));

  it('refuses a retry whose body hashes to neither', () =>
    spec(idempotencyDecider)
      .given([claimedBy('a1')])
      .when({ ...claim('2026-03-01T00:00:30.000Z', 'a2'), hash: 'other', legacyHash: 'other-as-written' })
      .thenFails('idempotency_key_reused'));

  it('ignores a release for a claim that was never written', () =>
    spec(idempotencyDecider).given([]).when({ type: 'Release', attempt: 'a1' }).then([]));
});
