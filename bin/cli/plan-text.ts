import { PLANS } from '../../domain/organizations/plans.ts';
import type { Plan } from '../../platform/tenancy.ts';

const PLAN_NAMES: Plan[] = ['free', 'pro', 'business'];

const count = (n: number) => n.toLocaleString('en-US');
const euros = (amount: number) => `€${Number.isInteger(amount) ? amount : amount.toFixed(2)}`;
const limit = (n: number | null, one: string, many: string) =>
  n === null ? `unlimited ${many}` : `${count(n)} ${n === 1 ? one : many}`;

/** A plan's monthly price: `€20/month`. */
export const priceText = (plan: Plan) => `${euros(PLANS[plan].monthlyPriceEur)}/month`;

/** What a plan includes, in a line: emails a month and what past them, domains, templates, webhook endpoints. */
export function limitsText(plan: Plan): string {
  const p = PLANS[plan];
  const past = p.overagePer1000Eur === null ? 'then refused' : `then ${euros(p.overagePer1000Eur)} per 1,000`;
  return [
    `${count(p.emailsPerMonth)} emails a month (${past})`,
    limit(p.domains, 'domain', 'domains'),
    limit(p.templates, 'template', 'templates'),
    limit(p.webhooks, 'webhook endpoint', 'webhook endpoints'),
  ].join(', ');
}

/** Every plan with its price and limits, one line each, under a heading. */
export const plansTable = () => [
  'Plans:',
  ...PLAN_NAMES.map((plan) => `  ${plan.padEnd(8)}  ${priceText(plan).padEnd(9)}  ${limitsText(plan)}`),
];
