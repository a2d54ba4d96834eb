import { PLANS } from '../../domain/organizations/plans.ts';
import type { Database } from '../../platform/db/database.ts';
import type { Plan } from '../../platform/tenancy.ts';
import { findOrganization } from '../api-keys/api-keys.queries.ts';
import { iso } from '../pagination.ts';

/** A plan as the API and the CLI show it: its price, its limits (null: unlimited) and its overage price. */
export function planJson(plan: Plan) {
  const terms = PLANS[plan];
  return {
    name: plan,
    price: { amount: terms.monthlyPriceEur, currency: 'EUR' as const, interval: 'month' as const },
    limits: {
      emails_per_month: terms.emailsPerMonth,
      monthly_hard_stop: terms.monthlyHardStop,
      domains: terms.domains,
      templates: terms.templates,
      webhook_endpoints: terms.webhooks,
    },
    overage:
      terms.overagePer1000Eur === null
        ? null
        : { amount: terms.overagePer1000Eur, currency: 'EUR' as const, per_emails: 1000 },
  };
}

/** The caller's organization with its plan, or null (an organization the read model does not have yet). */
export async function organizationJson(db: Database, orgId: string) {
  const org = await findOrganization(db, orgId);
  if (!org) return null;
  return {
    object: 'organization' as const,
    id: org.id,
    name: org.name,
    plan: planJson(org.plan),
    created_at: iso(org.created_at),
  };
}
