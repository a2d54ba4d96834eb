import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PATIENCE_MS } from '../support/patience.ts';
import { useTestService } from '../support/service.ts';

/**
 * `/docs` in a real browser: Debian's Chromium, headless. The page must render the API reference from what
 * Postline serves itself; any request to another host (a CDN, web fonts, telemetry) fails the test.
 */
const CHROMIUM = '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM);
if (missing) console.log(`docs-page.test.ts skipped: no Chromium at ${CHROMIUM} (apt-get install chromium)`);

describe.skipIf(missing)('GET /docs in headless Chromium', () => {
  const svc = useTestService();
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('shows the API title and an endpoint, loading nothing from another host', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(PATIENCE_MS);
    const origin = new URL(svc.baseUrl).origin;
    const foreign: string[] = [];
    await page.route('**', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${origin}/`) || url.startsWith('data:') || url.startsWith('blob:'))
        return route.continue();
      foreign.push(url);
      return route.abort();
    });
    await page.goto(`${svc.baseUrl}/docs`);
    await expect.poll(() => page.locator('h1').first().textContent()).toContain('Postline API');
    await expect
      // biome-ignore lint/performance/useDomNodeTextContent: what the reader sees, not the hidden nodes
      .poll(() => page.locator('body').innerText())
      .toContain('Create an API key');
    await page.waitForLoadState('networkidle');
    expect(foreign).toEqual([]);
    await page.close();
  });
});
