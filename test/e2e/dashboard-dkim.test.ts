import { beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, useDashboardBrowser } from '../support/dashboard-browser.ts';
import type { TestOrg } from '../support/service.ts';

if (!hasChromium)
  console.log('dashboard DKIM test skipped: /usr/bin/chromium is missing (apt-get install chromium)');

describe.skipIf(!hasChromium)("the domain screen's DKIM keys", () => {
  const { opened, go, signIn } = useDashboardBrowser();
  let org: TestOrg;
  beforeAll(() => ({ org } = opened));

  it('rotates the key and adds Ed25519, showing each key’s state', async () => {
    const added = await org.test.post('/v1/domains', { name: 'dkim-dash.example' });
    expect(added.status).toBe(201);
    const id = added.body.id;
    await org.test.post(`/v1/domains/${id}/verify`, { simulate: 'verified' });
    await signIn(org.testKey);
    await go(`/domains/${id}`);
    const page = opened.page;
    const rows = page.locator('table.dkim-keys tbody tr');
    await page.getByRole('heading', { name: 'DKIM keys' }).waitFor();
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain('RSA');

    await page.getByRole('button', { name: 'Rotate DKIM key' }).click();
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.nth(1).textContent()).toContain('Publish its record');
    expect(await page.getByRole('button', { name: 'Rotate DKIM key' }).isDisabled()).toBe(true);
    expect(await page.locator('tr[data-purpose="dkim"]').count()).toBe(2);

    // The new record verifies (simulated): the new key signs, the old one is retiring.
    await org.test.post(`/v1/domains/${id}/verify`, { simulate: 'verified' });
    await go(`/domains/${id}`);
    await expect.poll(() => rows.first().textContent()).toContain('Removable after');
    expect(await rows.nth(1).textContent()).toMatch(/yes/);

    await page.getByRole('button', { name: 'Add Ed25519 key' }).click();
    await expect.poll(() => rows.count()).toBe(3);
    expect(await rows.nth(2).textContent()).toContain('Ed25519');
    expect(await page.getByRole('button', { name: 'Add Ed25519 key' }).count()).toBe(0);
  }, 60_000);
});
