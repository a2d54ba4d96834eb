import { describe, it } from 'vitest';
import { type QuotaEvent, quotaDecider } from '../../write-side/emails/quota.ts';
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
  it('refuses once used up', () =>
    spec(quotaDecider)
      .given([consumed(60), consumed(40)])
      .when(consume(1))
      .thenFails('monthly_quota_exceeded', /100/));
});
