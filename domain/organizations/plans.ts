import type { Plan } from '../../platform/tenancy.ts';

/** What a plan costs and includes. `null` for a limit: the plan does not limit it. */
export interface PlanTerms {
  /** The price a month, in euros. */
  monthlyPriceEur: number;
  /** Emails a month per organization and mode. */
  emailsPerMonth: number;
  /** Refuse sends past `emailsPerMonth` (else they are counted as overage). */
  monthlyHardStop: boolean;
  overagePer1000Eur: number | null;
  domains: number | null;
  templates: number | null;
  webhooks: number | null;
}

/**
 * The plan catalogue, a pure rule: every limit a command enforces, every figure GET /v1/usage reports, and the
 * prices GET /v1/organization and the CLI show.
 */
export const PLANS: Record<Plan, PlanTerms> = {
  free: {
    monthlyPriceEur: 0,
    emailsPerMonth: 100,
    monthlyHardStop: true,
    overagePer1000Eur: null,
    domains: 1,
    templates: 5,
    webhooks: 1,
  },
  pro: {
    monthlyPriceEur: 20,
    emailsPerMonth: 50_000,
    monthlyHardStop: false,
    overagePer1000Eur: 0.4,
    domains: 10,
    templates: null,
    webhooks: 10,
  },
  business: {
    monthlyPriceEur: 80,
    emailsPerMonth: 200_000,
    monthlyHardStop: false,
    overagePer1000Eur: 0.3,
    domains: null,
    templates: null,
    webhooks: null,
  },
};

/**
 * The quota period an instant counts toward: its calendar month in UTC (`2026-01`). An ISO time in UTC (what events
 * hold) is read without a Date.
 */
export const monthOf = (at: Date | string) =>
  (typeof at === 'string' && /^\d{4}-\d\d-\d\dT[^+-]*Z$/.test(at) ? at : new Date(at).toISOString()).slice(
    0,
    7,
  );

/** The first instant after calendar month `month` (YYYY-MM, UTC): when the next month's quota begins. */
export function monthEnd(month: string): Date {
  const [year, m] = month.split('-').map(Number);
  const end = new Date(Date.UTC(year, m, 1));
  end.setUTCFullYear(m === 12 ? year + 1 : year); // Date.UTC reads the years 0 to 99 as 1900 to 1999
  return end;
}
