import { beforeAll, describe, expect, it } from 'vitest';
import { changePlan } from '../../write-side/organizations/organization.commands.ts';
import { hasChromium, useDashboardBrowser } from '../support/dashboard-browser.ts';
import type { TestOrg } from '../support/service.ts';

if (!hasChromium)
  console.log('dashboard plan test skipped: /usr/bin/chromium is missing (apt-get install chromium)');

describe.skipIf(!hasChromium)("the dashboard's overview", () => {
  const { svc, opened, go, signIn } = useDashboardBrowser();
  let org: TestOrg;
  beforeAll(() => ({ org } = opened));

  it('shows the plan with its monthly price and what it includes', async () => {
    await signIn(org.testKey);
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
});
