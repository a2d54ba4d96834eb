import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hasChromium, useDashboardBrowser } from '../support/dashboard-browser.ts';
import { mxClient } from '../support/inbound.ts';
import type { TestOrg } from '../support/service.ts';

if (!hasChromium)
  console.log('dashboard DMARC test skipped: /usr/bin/chromium is missing (apt-get install chromium)');

const FIXTURES = [
  'google.com!acme-dmarc.test!1795564800!1795651199.zip',
  'enterprise.protection.outlook.com!acme-dmarc.test!1795651200!1795737600.xml.gz',
  'yahoo.com!acme-dmarc.test!1795737600!1795823999.xml.gz',
];
const fixture = (file: string) => readFileSync(new URL(`../fixtures/dmarc/${file}`, import.meta.url));

/**
 * The domain screen's DMARC view: the Google (zip), Microsoft and Yahoo (gzip) fixture reports, mailed to the
 * domain's `rua` address on the MX, drawn as pass rates per day, with the senders that are not Postline named.
 */
describe.skipIf(!hasChromium)("the dashboard's DMARC reports", () => {
  const { svc, opened, go, signIn } = useDashboardBrowser({
    env: { SMTP_MX_PORT: '0', POSTLINE_OUTBOUND_IPS: '192.0.2.10' },
  });
  it('charts the pass rates of each reported day and names the unknown senders', async () => {
    const org: TestOrg = opened.org;
    const domainId: string = (await org.live.post('/v1/domains', { name: 'acme-dmarc.test' })).body.id;
    const rua = `dmarc+${domainId}@mx.postline.localhost`;
    for (const file of FIXTURES) {
      const sent = await mxClient(svc.postline.smtp!.mxPort!).sendMail({
        envelope: { from: `dmarc@${file.split('!')[0]}`, to: [rua] },
        from: `dmarc@${file.split('!')[0]}`,
        to: rua,
        subject: `Report domain: acme-dmarc.test Submitter: ${file.split('!')[0]}`,
        text: 'This is an aggregate report from a mail receiver.',
        attachments: [{ filename: file, content: fixture(file) }],
      });
      expect(sent.response).toBe('250 2.0.0 Ok: received');
    }
    await expect
      .poll(async () => (await org.live.get(`/v1/domains/${domainId}/dmarc-reports`)).body.data.length)
      .toBe(3);

    await signIn(org.liveKey);
    await go(`/domains/${domainId}`);
    const page = opened.page;
    const chart = page.locator('figure.dmarc-chart svg');
    await chart.waitFor();
    const dmarc = chart.locator('g[data-series="dmarc_pass"] circle');
    expect(await dmarc.evaluateAll((cs) => cs.map((c) => [c.dataset.day, c.dataset.rate]))).toEqual([
      ['2026-11-25', '97'],
      ['2026-11-26', '87'],
      ['2026-11-27', '75'],
    ]);
    const spf = chart.locator('g[data-series="spf_aligned"] circle');
    expect(await spf.evaluateAll((cs) => cs.map((c) => c.dataset.rate))).toEqual(['0', '87', '0']);

    const unknown = page.locator('table.dmarc-unknown tbody tr');
    expect(await unknown.evaluateAll((rows) => rows.map((r) => r.dataset.ip))).toEqual([
      '198.51.100.23',
      '203.0.113.45',
    ]);
    expect(await unknown.first().locator('td').allTextContents()).toEqual([
      '198.51.100.23',
      '19',
      '0%',
      'Yahoo, google.com',
    ]);
    expect(await page.locator('table.dmarc-unknown').textContent()).not.toContain('192.0.2.10');
  }, 60_000);
});
