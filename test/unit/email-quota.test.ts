import { describe, expect, it } from 'vitest';
import { type QuotaEvent, quotaDecider, secondsUntilNextMonth } from '../../domain/emails/quota.decider.ts';
import { spec } from '../support/given-when-then.ts';

const consumed = (granted: number): QuotaEvent => ({
  type: 'MonthlyQuotaConsumed',
  data: { month: '2026-01', granted, consumedAt: '2026-01-05T00:00:00.000Z' },
});
const consume = (requested: number) => ({
  type: 'ConsumeQuota' as const,
  month: '2026-01',
  requested,
  limit: 100,
  at: '2026-01-05T00:00:00.000Z',
});

describe('monthly quota decider (Free plan hard stop)', () => {
  it('grants within the quota', () =>
    spec(quotaDecider)
      .given([])
      .when(consume(1))
      .then([consumed(1)]));
  it('grants the last email', () =>
    spec(quotaDecider)
      .given([consumed(99)])
      .when(consume(1))
      .then([consumed(1)]));
  it('grants part of a batch that does not fit', () =>
    spec(quotaDecider)
      .given([consumed(95)])
      .when(consume(10))
      .then([consumed(5)]));
  it('grants all a strict batch asks, or refuses it whole: nothing taken', () => {
    spec(quotaDecider)
      .given([consumed(90)])
      .when({ ...consume(10), whole: true })
      .then([consumed(10)]);
    spec(quotaDecider)
      .given([consumed(95)])
      .when({ ...consume(10), whole: true })
      .thenFails('monthly_quota_exceeded', /100/);
  });
  it('grants a request once: a retry of it gets its grant again, taking nothing', () =>
    spec(quotaDecider)
      .given([{ ...consumed(3), data: { ...consumed(3).data, request: 'em_1' } }, consumed(97)])
      .when({ ...consume(3), request: 'em_1' })
      .then([]));
  it('counts the emails the read model holds for the month, when more than it granted (sent on another plan)', () =>
    spec(quotaDecider)
      .given([consumed(10)])
      .when({ ...consume(10), counted: 95 })
      .then([consumed(5)]));
  it('refuses when the read model counts the whole quota used', () =>
    spec(quotaDecider)
      .given([])
      .when({ ...consume(1), counted: 120 })
      .thenFails('monthly_quota_exceeded', /100/));
  it('refuses once used up', () =>
    spec(quotaDecider)
      .given([consumed(60), consumed(40)])
      .when(consume(1))
      .thenFails('monthly_quota_exceeded', /100/));
  it('says when the quota resets: the seconds until the next month, in UTC', () => {
    expect(secondsUntilNextMonth('2026-03-31T23:59:30Z')).toBe(30);
    expect(secondsUntilNextMonth('2026-12-31T23:00:00.500Z')).toBe(3600);
    expect(secondsUntilNextMonth('2026-02-01T00:00:00Z')).toBe(28 * 86_400);
  });
});
