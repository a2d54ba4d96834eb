import { AppError } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import { monthEnd, monthOf } from '../organizations/plans.ts';

export const quotaStream = (orgId: string, mode: Mode, month: string) => `quota-${orgId}-${mode}-${month}`;

export type QuotaEvent = {
  type: 'MonthlyQuotaConsumed';
  data: {
    month: string;
    granted: number;
    consumedAt: string;
    /** The request it was granted to: the first id it chose under an Idempotency-Key. */
    request?: string;
  };
};
export type ConsumeQuota = {
  type: 'ConsumeQuota';
  month: string;
  requested: number;
  limit: number;
  at: string;
  request?: string;
  /** All that is requested or nothing (a strict batch): refused when less is left. */
  whole?: boolean;
  /**
   * The emails the read model counts for the month (`email_usage`), those sent under a plan without a hard stop
   * too: a month counts once whatever plan the organization was on in it.
   */
  counted?: number;
};

export interface QuotaState {
  used: number;
  /** Grants by request (`request`), so that a retry of an interrupted request is not counted twice. */
  grants: Record<string, number>;
}

/**
 * The monthly quota of a plan with a hard stop (plans.ts): counted in a stream per month
 * (`quota-<org>-<mode>-<yyyy-mm>`) appended with an expected revision, so concurrent requests cannot overshoot
 * it. Plans without one are never refused; their overage is counted from the `emails` read model (`email_usage`,
 * GET /v1/usage). Used is the larger of the stream's grants and the read model's count (`counted`), so that what
 * was sent this month on another plan counts after a move to a plan with a hard stop. Grants what is left, up to
 * the request; refuses only when nothing is left (a batch gets a partial grant), or, for a request that must
 * have all it asks (`whole`), when less is left. A request's grant is taken once (`request`).
 */
export const quotaDecider: Decider<ConsumeQuota, QuotaEvent, QuotaState> = {
  initialState: { used: 0, grants: {} },
  evolve: (s, e) => ({
    used: s.used + e.data.granted,
    grants: e.data.request ? { ...s.grants, [e.data.request]: e.data.granted } : s.grants,
  }),
  decide(c, s) {
    // A request granted before (an interrupted attempt of it): its grant stands, nothing is taken again.
    if (c.request !== undefined && c.request in s.grants) return [];
    const left = Math.max(0, c.limit - Math.max(s.used, c.counted ?? 0));
    if (left === 0 || (c.whole && left < c.requested)) throw quotaExceeded(c.limit, c.month, c.at);
    return [
      {
        type: 'MonthlyQuotaConsumed',
        data: {
          month: c.month,
          granted: Math.min(left, c.requested),
          consumedAt: c.at,
          ...(c.request !== undefined && { request: c.request }),
        },
      },
    ];
  },
};

/** Whole seconds from `at` (ISO) until the next calendar month begins, in UTC: when a month's quota resets. */
export function secondsUntilNextMonth(at: string): number {
  return Math.max(1, Math.ceil((monthEnd(monthOf(at)).getTime() - Date.parse(at)) / 1000));
}

/** The refusal once the month's quota is used up; `Retry-After` says when it resets. */
export const quotaExceeded = (limit: number, month: string, at: string) =>
  new AppError(
    'monthly_quota_exceeded',
    `The plan's monthly quota of ${limit} emails is used up for ${month}; upgrade the plan or wait for next month.`,
    { 'Retry-After': String(secondsUntilNextMonth(at)) },
  );
