import { beforeAll, describe, expect, it } from 'vitest';
import { changePlan } from '../../write-side/organizations/organization.commands.ts';
import { hasChromium, useDashboardBrowser } from '../support/dashboard-browser.ts';
import { PATIENCE } from '../support/patience.ts';
import type { TestOrg } from '../support/service.ts';

if (!hasChromium)
  console.log('dashboard plan test skipped: /usr/bin/chromium is missing (apt-get install chromium)');

describe.skipIf(!hasChromium)("the dashboard's overview", () => {
  const { svc, opened, go, signIn } = useDashboardBrowser();
  let org: TestOrg;
  beforeAll(async () => {
    ({ org } = opened);
    await signIn(org.testKey);
  });

  it('shows the plan with its monthly price and what it includes', async () => {
    await go('/');
    const page = opened.page;
    const limits = page.getByRole('list', { name: 'What the plan includes' });
    await limits.waitFor();
    expect(await page.locator('.plan p').first().textContent()).toBe('Pro plan · €20 a month');
    expect(await limits.locator('li').allTextContents()).toEqual([
      '50,000 emails a month, then €0.40 per 1,000',
      '10 domains',
      'Unlimited templates',
      '10 webhook endpoints',
    ]);

    // Another plan, once the operator moved the organization (the CLI's `orgs set-plan`).
    const { position } = await changePlan(svc.postline.services, org.orgId, 'business');
    await svc.postline.services.readYourWrites.waitFor(['api_keys'], position);
    await go('/');
    await expect
      .poll(() => page.locator('.plan p').first().textContent())
      .toBe('Business plan · €80 a month');
    expect(await limits.locator('li').allTextContents()).toEqual([
      '200,000 emails a month, then €0.30 per 1,000',
      'Unlimited domains',
      'Unlimited templates',
      'Unlimited webhook endpoints',
    ]);
  }, 60_000);

  it('shows the last 30 days from the emails’ metrics, with the rates providers judge a sender by', async () => {
    for (const to of ['delivered@simulator.postline.dev', 'bounced@simulator.postline.dev']) {
      const sent = await org.test.post('/v1/emails', { from: 'hi@acme.test', to, subject: 's', text: 't' });
      expect(sent.status).toBe(200);
    }
    const page = opened.page;
    const totals = page.getByRole('list', { name: 'Totals over 30 days' });
    await expect
      .poll(async () => {
        await go('/');
        await totals.waitFor();
        return totals.locator('li').allTextContents();
      }, PATIENCE)
      .toEqual([
        '2 sent',
        '1 delivered',
        '1 bounced',
        '0 complained',
        '0 opened',
        '50.0% delivered',
        '50.0% bounced',
        '0.0% complained',
        '0.0% unsubscribed',
      ]);
    // Today's point of the chart holds them.
    const today = page.locator('[data-series="sent"] circle').last();
    expect(await today.getAttribute('data-rate')).toBe('2');
  });
});
