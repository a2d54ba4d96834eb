import {
  type ConsumeQuota,
  type QuotaState,
  quotaDecider,
  quotaExceeded,
  quotaStream,
} from '../../domain/emails/quota.decider.ts';
import { monthOf, PLANS } from '../../domain/organizations/plans.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import type { Services } from '../../platform/services.ts';

type Payer = Pick<AuthContext, 'orgId' | 'mode' | 'plan'>;

/**
 * Takes up to `requested` emails from the quota of the month of `at` (when they are accepted: their `created_at`,
 * so that the usage read model counts them in the same month); returns how many may go. Only Free has a hard stop.
 * `request` (the first id the request chose under an Idempotency-Key): a request granted before gets its grant
 * again, not a second one. `whole`: all of `requested` or a refusal (a strict batch). The month's emails the read
 * model counts are used too, so that an organization moved to Free mid-month keeps what it sent before (on Pro,
 * say) in its count.
 */
export async function consumeQuota(
  services: Services,
  auth: Payer,
  requested: number,
  at: Date,
  request?: string,
  whole = false,
): Promise<number> {
  const plan = PLANS[auth.plan];
  if (!plan.monthlyHardStop || requested === 0) return requested;
  const month = monthOf(at);
  const limit = plan.emailsPerMonth;
  const consume = async (state: QuotaState): Promise<ConsumeQuota> => {
    const command = {
      type: 'ConsumeQuota' as const,
      month,
      requested,
      limit,
      at: at.toISOString(),
      request,
      whole,
    };
    // Nothing to count when the stream alone refuses, or when this request was granted before.
    if (state.used >= limit || (request !== undefined && request in state.grants)) return command;
    return { ...command, counted: await services.lookUps.monthlyUsage(services.db, auth, month) };
  };
  const result = await handleCommand(
    services.store,
    quotaStream(auth.orgId, auth.mode, month),
    quotaDecider,
    consume,
    { orgId: auth.orgId, mode: auth.mode, actor: 'system' },
    { retries: 50 },
  );
  return result.events[0]?.data.granted ?? result.state.grants[request!];
}

/** The refusal of a send once the quota of the month of `at` is used up. */
export const monthUsedUp = (auth: Payer, at: Date) =>
  quotaExceeded(PLANS[auth.plan].emailsPerMonth, monthOf(at), at.toISOString());

/**
 * One email's quota, for a draft: refused with `monthly_quota_exceeded` when the month is used up. `request`: the
 * id chosen under an idempotency key, so that a repeated attempt gets its grant again.
 */
export const oneEmail = (services: Services, auth: Payer, request?: string) => async (at: Date) => {
  if ((await consumeQuota(services, auth, 1, at, request)) < 1) throw monthUsedUp(auth, at);
};
