import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../../bin/cli/commands.ts';
import { changePlan } from '../../write-side/organizations/organization.commands.ts';
import { useTestService } from '../support/service.ts';

/** The plans as the spec states them: monthly prices and what each includes (null: unlimited). */
const FREE = {
  name: 'free',
  price: { amount: 0, currency: 'EUR', interval: 'month' },
  limits: { emails_per_month: 100, monthly_hard_stop: true, domains: 1, templates: 5, webhook_endpoints: 1 },
  overage: null,
};
const PRO = {
  name: 'pro',
  price: { amount: 20, currency: 'EUR', interval: 'month' },
  limits: {
    emails_per_month: 50_000,
    monthly_hard_stop: false,
    domains: 10,
    templates: null,
    webhook_endpoints: 10,
  },
  overage: { amount: 0.4, currency: 'EUR', per_emails: 1000 },
};
const BUSINESS = {
  name: 'business',
  price: { amount: 80, currency: 'EUR', interval: 'month' },
  limits: {
    emails_per_month: 200_000,
    monthly_hard_stop: false,
    domains: null,
    templates: null,
    webhook_endpoints: null,
  },
  overage: { amount: 0.3, currency: 'EUR', per_emails: 1000 },
};

const svc = useTestService();

/** What a CLI command prints, and its exit code. */
async function cli(argv: string[]) {
  const out = new PassThrough();
  const code = await runCommand(argv, svc.postline, out);
  return { code, text: (out.read() ?? '').toString() as string };
}

describe('GET /v1/organization', () => {
  it('names the organization and its plan, with what the plan costs and includes', async () => {
    for (const [plan, expected] of [
      ['free', FREE],
      ['pro', PRO],
      ['business', BUSINESS],
    ] as const) {
      const org = await svc.createOrg(plan);
      const r = await org.live.get('/v1/organization');
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toEqual({
        object: 'organization',
        id: org.orgId,
        name: expect.any(String),
        plan: expected,
        created_at: expect.any(String),
      });
      // The same organization in test mode: one plan for both modes.
      expect((await org.test.get('/v1/organization')).body).toEqual(r.body);
    }
  });

  it('follows a change of plan', async () => {
    const org = await svc.createOrg('free');
    const { position } = await changePlan(svc.postline.services, org.orgId, 'business');
    await svc.postline.services.readYourWrites.waitFor(['api_keys'], position);
    expect((await org.live.get('/v1/organization')).body.plan).toEqual(BUSINESS);
  });

  it('is for full-access keys only', async () => {
    const org = await svc.createOrg('pro');
    const sender = await org.live.post('/v1/api-keys', { name: 'sender', permission: 'sending_access' });
    const r = await svc.client(sender.body.key).get('/v1/organization');
    expect([r.status, r.body.error.code]).toEqual([403, 'insufficient_permission']);
  });
});

describe('postline orgs list', () => {
  it("shows each organization's plan with its price, and what every plan costs and includes", async () => {
    const org = await svc.createOrg('pro');
    const { code, text } = await cli(['orgs', 'list']);
    expect(code).toBe(0);
    const line = text.split('\n').find((l) => l.startsWith(org.orgId));
    expect(line).toMatch(new RegExp(`^${org.orgId}  pro +€20/month  keys live 1, test 1  `));
    expect(text).toContain(
      [
        'Plans:',
        '  free      €0/month   100 emails a month (then refused), 1 domain, 5 templates, 1 webhook endpoint',
        '  pro       €20/month  50,000 emails a month (then €0.40 per 1,000), 10 domains, unlimited templates, 10 webhook endpoints',
        '  business  €80/month  200,000 emails a month (then €0.30 per 1,000), unlimited domains, unlimited templates, unlimited webhook endpoints',
      ].join('\n'),
    );
  });

  it('gives the price and limits in its JSON lines too, keeping the fields it had', async () => {
    const org = await svc.createOrg('business');
    const { code, text } = await cli(['orgs', 'list', '--json']);
    expect(code).toBe(0);
    const rows = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.find((r) => r.org_id === org.orgId)).toEqual({
      org_id: org.orgId,
      name: expect.any(String),
      plan: 'business',
      plan_price: BUSINESS.price,
      plan_limits: BUSINESS.limits,
      plan_overage: BUSINESS.overage,
      created_at: expect.any(String),
      track_client_details: false,
      live_keys: 1,
      test_keys: 1,
    });
  });
});
