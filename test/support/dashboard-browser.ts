import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { PATIENCE_MS } from './patience.ts';
import { ROOT } from './process.ts';
import { type TestOrg, useTestService } from './service.ts';

// What the dashboard's browser tests share: Chromium from Debian, a browser that may reach only the service,
// a webhook receiver, and the screenshots `npm run screenshots:dashboard` saves.

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
/** `npm run screenshots:dashboard`: the browser tests also save the main screens to docs/dashboard/. */
const SCREENSHOTS = process.env.DASHBOARD_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'dashboard') : undefined;

/**
 * Chromium at 1280×860 whose page may reach only `baseUrl`'s origin: a request to anywhere else is aborted
 * and pushed to `foreign`, as is every error the page throws.
 */
async function openBrowser(
  baseUrl: string,
  foreign: string[],
): Promise<{ browser: Browser; context: BrowserContext; page: Page }> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  // What the page shows is waited for as long as any condition (Playwright's own default is 30 s).
  context.setDefaultTimeout(PATIENCE_MS);
  const origin = new URL(baseUrl).origin;
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('pageerror', (e) => foreign.push(`page error: ${e.message}`));
  return { browser, context, page };
}

/**
 * A webhook receiver on a free local port that answers 200 with a few words (the delivery log keeps them), handing
 * each request and its body to `onRequest`.
 */
async function startReceiver(
  onRequest: (req: IncomingMessage, body: string) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      onRequest(req, body);
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`<b>got ${req.headers['webhook-id']}</b>`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` };
}

/** With `npm run screenshots:dashboard`, saves the top of the page as docs/dashboard/{name}.png. */
async function screenshot(page: Page, name: string) {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.evaluate(() => scrollTo(0, 0));
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false });
}

/**
 * The error a form shows beneath field `#f-{id}` (waited for), which says `says`; the field labelled `label`, when
 * given, is marked invalid for assistive technology.
 */
export async function fieldError(page: Page, id: string, says: string, label?: string) {
  const error = page.locator(`#f-${id}-error`);
  await error.waitFor();
  expect(await error.textContent()).toContain(says);
  if (label) expect(await page.getByLabel(label).getAttribute('aria-invalid')).toBe('true');
  return error;
}

/** What `useDashboardBrowser` opens before the tests. */
export interface DashboardBrowser {
  org: TestOrg;
  context: BrowserContext;
  page: Page;
  /** Where the webhook receiver listens. */
  receiverUrl: string;
}

/**
 * For the `describe` it is called in: the service with every process manager on, a Pro organization, a webhook
 * receiver that keeps each request's `webhook-id` and body in `received`, and a browser (`openBrowser`) on a page
 * of the service. After the tests they are closed, and `foreign` must be empty: the page asked nothing of any other
 * host (no CDN, no fonts) and threw no error.
 */
export function useDashboardBrowser(o: { env?: Record<string, string> } = {}) {
  const svc = useTestService({ processes: true, env: o.env });
  const opened = {} as DashboardBrowser;
  const received: { id: string; body: string }[] = [];
  const foreign: string[] = [];
  let browser: Browser | undefined;
  let receiver: Server | undefined;
  beforeAll(async () => {
    opened.org = await svc.createOrg('pro');
    ({ server: receiver, url: opened.receiverUrl } = await startReceiver((req, body) =>
      received.push({ id: String(req.headers['webhook-id']), body }),
    ));
    ({ browser, context: opened.context, page: opened.page } = await openBrowser(svc.baseUrl, foreign));
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    expect(foreign).toEqual([]);
  });
  const page = () => opened.page;
  return {
    svc,
    opened,
    received,
    foreign,
    go: (path: string) => page().goto(`${svc.baseUrl}${path}`),
    shot: (name: string) => screenshot(page(), name),
    async signIn(key: string) {
      await page().goto(`${svc.baseUrl}/`);
      await page().getByLabel('API key').fill(key);
      await page().getByRole('button', { name: 'Sign in' }).click();
      await page().getByRole('navigation', { name: 'Sections' }).waitFor();
      // The overview has loaded: a key revoked next is refused by the request a test makes, not by one
      // of the overview's own still under way (which would sign the tab out before the test's click).
      await page().waitForFunction(() => !document.querySelector('[role="status"]'));
    },
  };
}
