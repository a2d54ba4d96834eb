import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { ROOT } from './process.ts';

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
export async function openBrowser(
  baseUrl: string,
  foreign: string[],
): Promise<{ browser: Browser; context: BrowserContext; page: Page }> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
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

/** A webhook receiver on a free local port that answers 204, handing each request and its body to `onRequest`. */
export async function startReceiver(
  onRequest: (req: IncomingMessage, body: string) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      onRequest(req, body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` };
}

/** With `npm run screenshots:dashboard`, saves the top of the page as docs/dashboard/{name}.png. */
export async function screenshot(page: Page, name: string) {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.evaluate(() => scrollTo(0, 0));
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false });
}
