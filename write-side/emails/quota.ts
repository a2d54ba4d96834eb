import { AppError } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Plan } from '../../platform/http/auth-context.ts';

/**
 * The monthly plan quota. Free is a hard stop at 100 emails a month per organization and mode: it is counted in
 * a stream per month (`quota-<org>-<mode>-<yyyy-mm>`) appended with an expected revision, so concurrent requests
 * cannot overshoot it. Pro and Business are never refused; their overage is counted from the `emails` read model
 * (`email_usage`, GET /v1/usage).
 */
export const PLAN_QUOTAS: Record<
  Plan,
  { included: number; hardStop: boolean; overagePer1000Eur: number | null }
> = {
  free: { included: 100, hardStop: true, overagePer1000Eur: null },
  pro: { included: 50_000, hardStop: false, overagePer1000Eur: 0.4 },
  business: { included: 200_000, hardStop: false, overagePer1000Eur: 0.3 },
};

/** Calendar month in UTC: `2026-01`. An ISO time in UTC (what events hold) is read without a Date. */
export const monthOf = (at: Date | string) =>
  (typeof at === 'string' && /^\d{4}-\d\d-\d\dT[^+-]*Z$/.test(at) ? at : new Date(at).toISOString()).slice(
    0,
    7,
  );

export const quotaStream = (orgId: string, mode: Mode, month: string) => `quota-${orgId}-${mode}-${month}`;

export type QuotaEvent = {
  type: 'MonthlyQuotaConsumed';
  data: { month: string; granted: number; consumedAt: string };
};
export type ConsumeQuota = {
  type: 'ConsumeQuota';
  month: string;
  requested: number;
  limit: number;
  at: string;
};

/** Grants what is left, up to the request; refuses only when nothing is left (a batch gets a partial grant). */
export const quotaDecider: Decider<ConsumeQuota, QuotaEvent, { used: number }> = {
  initialState: { used: 0 },
  evolve: (s, e) => ({ used: s.used + e.data.granted }),
  decide(c, s) {
    const left = Math.max(0, c.limit - s.used);
    if (left === 0) throw quotaExceeded(c.limit, c.month);
    return [
      {
        type: 'MonthlyQuotaConsumed',
        data: { month: c.month, granted: Math.min(left, c.requested), consumedAt: c.at },
      },
    ];
  },
};

export const quotaExceeded = (limit: number, month: string) =>
  new AppError(
    'monthly_quota_exceeded',
    `The plan's monthly quota of ${limit} emails is used up for ${month}; upgrade the plan or wait for next month.`,
  );
