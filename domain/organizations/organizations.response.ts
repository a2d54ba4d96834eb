import { z } from 'zod';
import { timestamp } from '../../platform/http/route-schema.ts';

const euros = { amount: z.number(), currency: z.literal('EUR') };
const limit = (what: string) =>
  z
    .int()
    .nullable()
    .meta({ description: `${what}; null: unlimited` });

export const PlanTerms = z
  .strictObject({
    name: z.enum(['free', 'pro', 'business']),
    price: z
      .strictObject({ ...euros, interval: z.literal('month') })
      .meta({ description: 'What the plan costs a month; `amount` in euros.' }),
    limits: z.strictObject({
      emails_per_month: z
        .int()
        .meta({ description: 'Emails included a month, per mode (live and test are counted apart)' }),
      monthly_hard_stop: z.boolean().meta({
        description: 'true: sends past `emails_per_month` are refused; false: they count as overage',
      }),
      domains: limit('Sending domains'),
      templates: limit('Templates'),
      webhook_endpoints: limit('Webhook endpoints'),
    }),
    overage: z
      .strictObject({ ...euros, per_emails: z.int() })
      .nullable()
      .meta({
        description:
          'The price of emails past `emails_per_month`, in euros per `per_emails`; null: none (refused)',
      }),
  })
  .meta({
    id: 'PlanTerms',
    example: {
      name: 'pro',
      price: { amount: 20, currency: 'EUR', interval: 'month' },
      limits: {
        emails_per_month: 50000,
        monthly_hard_stop: false,
        domains: 10,
        templates: null,
        webhook_endpoints: 10,
      },
      overage: { amount: 0.4, currency: 'EUR', per_emails: 1000 },
    },
  });

export const Organization = z
  .strictObject({
    object: z.literal('organization'),
    id: z.string(),
    name: z.string(),
    plan: PlanTerms,
    created_at: timestamp,
  })
  .meta({ id: 'Organization' });
