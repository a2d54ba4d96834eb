import { quotaDecider, quotaExceeded, quotaStream } from '../../domain/emails/quota.decider.ts';
import { monthOf, PLANS } from '../../domain/organizations/plans.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import type { Services } from '../../platform/services.ts';

type Payer = Pick<AuthContext, 'orgId' | 'mode' | 'plan'>;

/**
 * Takes up to `requested` emails from the month's quota; returns how many may go. Only Free has a hard stop.
 * `request` (the first id the request chose under an Idempotency-Key): a request granted before gets its
 * grant again, not a second one.
 */
export async function consumeQuota(
  services: Services,
  auth: Payer,
  requested: number,
  request?: string,
): Promise<number> {
  const plan = PLANS[auth.plan];
  if (!plan.monthlyHardStop || requested === 0) return requested;
  const now = services.clock.now();
  const month = monthOf(now);
  const result = await handleCommand(
    services.store,
    quotaStream(auth.orgId, auth.mode, month),
    quotaDecider,
    { type: 'ConsumeQuota', month, requested, limit: plan.emailsPerMonth, at: now.toISOString(), request },
    { orgId: auth.orgId, mode: auth.mode, actor: 'system' },
    { retries: 50 },
  );
  return result.events[0]?.data.granted ?? result.state.grants[request!];
}

/** The refusal of a send once the month's quota is used up, as of now. */
export function monthUsedUp(services: Pick<Services, 'clock'>, auth: Payer) {
  const now = services.clock.now();
  return quotaExceeded(PLANS[auth.plan].emailsPerMonth, monthOf(now), now.toISOString());
}

/**
 * One email's quota, for a draft: refused with `monthly_quota_exceeded` when the month is used up. `request`: the
 * id chosen under an idempotency key, so that a repeated attempt gets its grant again.
 */
export const oneEmail = (services: Services, auth: Payer, request?: string) => async () => {
  if ((await consumeQuota(services, auth, 1, request)) < 1) throw monthUsedUp(services, auth);
};
