import { beforeAll, describe, expect, it } from 'vitest';
import { pauseDelivery } from '../../write-side/queue/queue.commands.ts';
import { hasChromium, useDashboardBrowser } from '../support/dashboard-browser.ts';
import type { TestOrg } from '../support/service.ts';

if (!hasChromium)
  console.log('dashboard queue test skipped: /usr/bin/chromium is missing (apt-get install chromium)');

describe.skipIf(!hasChromium)("the dashboard's Queue screen", () => {
  const { svc, opened, go, signIn } = useDashboardBrowser();
  let org: TestOrg;
  beforeAll(async () => {
    ({ org } = opened);
    const { db } = svc.postline.services;
    // Mail that no worker takes now: two waiting for a retry, one being delivered.
    await db.query(
      `INSERT INTO delivery_jobs (email_id, destination, org_id, mode, lane, queue, due_at, claimed_until, queued_at)
       VALUES ('em_q1', 'gmail.com', $1, 'live', 'transactional', $1 || ':transactional', now() + interval '1 hour', NULL, now() - interval '10 minutes'),
              ('em_q2', 'gmail.com', $1, 'live', 'transactional', $1 || ':transactional', now() + interval '1 hour', NULL, now()),
              ('em_q3', 'gmail.com', $1, 'live', 'transactional', $1 || ':transactional', now(), now() + interval '1 hour', now())`,
      [org.orgId],
    );
    await db.query(
      `INSERT INTO delivery_destinations (org_id, mode, destination, last_response, last_code, last_classification, last_at)
       VALUES ($1, 'live', 'gmail.com', '421 4.7.28 unusual rate of mail', 421, 'rate_limited', now())`,
      [org.orgId],
    );
    await db.query(
      `INSERT INTO delivery_replies (org_id, mode, destination, at, smtp_code, response, classification)
       VALUES ($1, 'live', 'gmail.com', now() - interval '1 minute', 421, '421 4.7.28 unusual rate of mail', 'rate_limited'),
              ($1, 'live', 'gmail.com', now() - interval '2 minutes', 250, '250 2.0.0 OK', NULL)`,
      [org.orgId],
    );
    const paused = await pauseDelivery(
      svc.postline.services,
      { destination: 'gmail.com', orgId: org.orgId, actor: 'cli' },
      { until: new Date(Date.now() + 2 * 3600_000).toISOString(), reason: 'rate limited' },
    );
    await svc.postline.services.readYourWrites.waitFor(['delivery_pauses'], paused.position!);
  });

  it("lists what waits per destination, paused or not, and a destination's recent replies", async () => {
    await signIn(org.liveKey);
    const page = opened.page;
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Queue' }).click();
    const row = page.locator('table.queue tbody tr[data-destination="gmail.com"]');
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    // The destination is paused: the two waiting for a retry are held by the pause.
    expect(cells.slice(0, 6)).toEqual(['gmail.com', 'transactional', '0', '0', '2', '1']);
    expect(cells[8]).toContain('421 4.7.28 unusual rate of mail');
    expect(await row.locator('td[data-paused="yes"] time').count()).toBe(1);

    await row.getByRole('link', { name: 'gmail.com' }).click();
    await page.getByRole('heading', { name: 'gmail.com' }).waitFor();
    const replies = page.locator('table.replies tbody tr');
    await replies.first().waitFor();
    expect(await replies.count()).toBe(2);
    expect(await replies.first().locator('td').nth(1).textContent()).toBe('421');
    expect(await replies.first().textContent()).toContain('rate limited');
    expect(await replies.nth(1).textContent()).toContain('250 2.0.0 OK');

    // Another destination has nothing waiting and no replies.
    await go('/queue/yahoo.com');
    await page.getByText('No mail waiting for yahoo.com.').waitFor();
    await page.getByText('No replies from this destination in the last day.').waitFor();
  }, 60_000);
});
