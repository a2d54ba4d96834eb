import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_CSP } from '../../platform/http/dashboard.ts';
import { CHROMIUM, fieldError, hasChromium, useDashboardBrowser } from '../support/dashboard-browser.ts';
import { ROOT } from '../support/process.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

if (!hasChromium)
  console.log(`dashboard browser tests skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
const DIST = join(ROOT, 'dashboard', 'dist');

function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  );
}

describe('the committed dashboard build', () => {
  it('is what `npm run build:dashboard` makes of dashboard/src today', async () => {
    const out = mkdtempSync(join(tmpdir(), 'postline-dashboard-'));
    try {
      // As the npm script runs it (not inside vitest, whose NODE_ENV=test would change the bundle).
      const { NODE_ENV: _, VITEST: __, ...env } = process.env;
      const vite = join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
      const args = [vite, 'build', '--config', 'dashboard/vite.config.ts', '--outDir', out, '--emptyOutDir'];
      const run = spawnSync(process.execPath, args, { cwd: ROOT, env, encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      const built = filesUnder(out).sort();
      expect(filesUnder(DIST).sort(), 'run `npm run build:dashboard` and commit dashboard/dist').toEqual(
        built,
      );
      for (const f of built)
        expect(readFileSync(join(DIST, f), 'utf8'), `dashboard/dist/${f} is stale`).toBe(
          readFileSync(join(out, f), 'utf8'),
        );
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

describe('the dashboard is served beside the API', () => {
  const svc = useTestService();
  const get = async (path: string, accept: string) => {
    const res = await request(`${svc.baseUrl}${path}`, { headers: { accept } });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, text };
  };
  const html = 'text/html,application/xhtml+xml,*/*;q=0.8';

  it('at / and at its client routes, for a browser, with its security headers', async () => {
    for (const path of ['/', '/emails', '/emails/em_123', '/templates/tmpl_1']) {
      const page = await get(path, html);
      expect(page.status, path).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.text).toContain('<div id="app">');
      expect(page.headers['content-security-policy']).toBe(DASHBOARD_CSP);
      expect(page.headers['x-frame-options']).toBe('DENY');
      expect(page.headers['x-content-type-options']).toBe('nosniff');
    }
    const script = /src="(\/assets\/[^"]+\.js)"/.exec((await get('/', html)).text)![1];
    const asset = await get(script, '*/*');
    expect(asset.status).toBe(200);
    expect(asset.headers['content-type']).toMatch(/javascript/);
    expect(asset.headers['cache-control']).toContain('immutable');
  });

  it("leaves the service's own paths alone, and unknown paths still answer the JSON error", async () => {
    for (const [path, status] of [
      ['/v1/nope', 401], // no key: the API answers first
      ['/v1/emails', 401],
      ['/healthz', 200],
      ['/t/o/not-a-token', 200], // the pixel, whatever the token
      ['/t/c/not-a-token', 404],
      ['/t/nope', 404],
      ['/blobs/nope', 404],
      ['/unsubscribe/nope', 404],
      ['/assets/nope.js', 404],
      ['/metrics', 200],
    ] as const) {
      const res = await get(path, html);
      expect(res.status, path).toBe(status);
      expect(res.text, path).not.toContain('<div id="app">');
    }
    // A client that asks for JSON (or anything) gets the API's error shape for an unknown path.
    for (const accept of ['application/json', '*/*']) {
      const res = await get('/nope', accept);
      expect(res.status).toBe(404);
      expect(JSON.parse(res.text).error).toMatchObject({ code: 'route_not_found' });
    }
    const post = await request(`${svc.baseUrl}/emails`, { method: 'POST', headers: { accept: html } });
    expect(post.statusCode).toBe(404);
    expect(((await post.body.json()) as any).error.code).toBe('route_not_found');
  });
});

describe.skipIf(!hasChromium)('the dashboard in a real browser', () => {
  const { svc, opened, received, foreign, go, shot, signIn } = useDashboardBrowser();
  let org: TestOrg;
  let context: BrowserContext;
  let page: Page;
  let receiverUrl: string;
  beforeAll(() => ({ org, context, page, receiverUrl } = opened));

  const signOut = async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
  };

  it('signs in with a test key, kept in sessionStorage only, and says test mode', async () => {
    await page.goto(`${svc.baseUrl}/`);
    await page.getByLabel('API key').fill('pk_test_wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('invalid');

    await signIn(org.testKey);
    await expect.poll(() => page.locator('[data-mode]').getAttribute('data-mode')).toBe('test');
    expect(await page.evaluate(() => sessionStorage.getItem('postline.api_key'))).toBe(org.testKey);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await context.cookies()).toEqual([]);
  });

  it('finds an email sent through the API, and follows its timeline to delivered', async () => {
    const sent = await org.test.post('/v1/emails', {
      from: 'Acme <hello@acme.example>',
      to: ['delivered@simulator.postline.dev'],
      subject: 'Dashboard hello',
      html: '<p style="color:#333">Hello <img src="https://images.example/logo.png" alt="logo"></p>',
      text: 'Hello',
      tags: ['welcome'],
    });
    expect(sent.status).toBe(200);
    for (const to of ['bounced', 'opened', 'complained'])
      await org.test.post('/v1/emails', {
        from: 'hello@acme.example',
        to: [`${to}@simulator.postline.dev`],
        subject: `Order ${to}`,
        text: 'Your order',
      });
    await go('/emails');
    await page.getByRole('link', { name: 'Dashboard hello' }).click();
    await page.getByRole('heading', { name: 'Dashboard hello' }).waitFor();
    // The page follows the email until it settles: the simulator delivers it about a second after it is sent.
    // The timeline is the email's own history; its status is the projection, which may come a reload later.
    await page.locator('.timeline [data-event="email.delivered"]').waitFor();
    await expect.poll(() => page.locator('.facts .badge').first().textContent()).toBe('delivered');
    const frame = page.locator('iframe[title^="HTML part"]');
    expect(await frame.getAttribute('sandbox')).toBe('');
    expect(await page.getByText('Remote images are blocked').count()).toBe(1);
    expect(await page.getByText('Hello', { exact: true }).count()).toBe(1); // the text part
    await shot('email');
    // No request for the remote image so far (it would be in `foreign`); asked for, the frame loads it.
    expect(foreign).toEqual([]);
    await page.getByRole('button', { name: 'Load remote images' }).click();
    await expect.poll(() => foreign).toEqual(['https://images.example/logo.png']);
    foreign.length = 0; // the one request to another host the test asked for

    // The list filters by the API's filters.
    await go('/emails?status=delivered');
    await page.getByRole('link', { name: 'Dashboard hello' }).waitFor();
    await go('/emails?tag=nope');
    await page.getByText('No emails match these filters').waitFor();
    await go('/emails');
    await page.getByRole('link', { name: 'Order bounced' }).waitFor();
    await shot('emails');
    // A bounced recipient shows its class beside its bounce type.
    await page.getByRole('link', { name: 'Order bounced' }).click();
    await page.getByText('invalid recipient').waitFor();
  });

  it('adds a domain and shows its records; an invalid name is shown beside the field', async () => {
    await go('/domains');
    await page.getByLabel('Domain name').fill('localhost');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await fieldError(page, 'name', '`name`', 'Domain name');

    await page.getByLabel('Domain name').fill('dash-example.com');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('heading', { name: /dash-example\.com/ }).waitFor();
    for (const [purpose, count] of [
      ['dkim', 1],
      ['spf', 1],
      ['dmarc', 1],
      ['return_path', 2],
    ] as const)
      expect(await page.locator(`tr[data-purpose="${purpose}"]`).count(), purpose).toBe(count);
    expect(await page.getByRole('button', { name: 'Copy dkim record value' }).count()).toBe(1);
    await page.getByLabel('Open tracking').check();
    await expect.poll(() => page.getByLabel('Open tracking').isChecked()).toBe(true);
    await shot('domain');
  });

  it('edits a template and the preview changes', async () => {
    await go('/templates');
    await page.getByLabel('Template name').fill('Welcome');
    await page.getByRole('button', { name: 'New template' }).click();
    const subject = page.locator('.preview-subject');
    await expect.poll(() => subject.textContent()).toBe('Hello Ada');
    await page.getByLabel('Subject').fill('Hi {{name}}, welcome aboard');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await expect.poll(() => subject.textContent()).toBe('Hi Ada, welcome aboard');
    // A template error names its field, shown beneath it.
    await page.getByLabel('HTML').fill('<p>{{#if}}</p>');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.locator('#f-html-error').waitFor();
    await page
      .getByLabel('HTML')
      .fill('<h1 style="font-family:sans-serif">Hi {{name}}</h1><p>Welcome aboard.</p>');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByRole('button', { name: 'Publish draft' }).click();
    await page.locator('.versions').getByText('published').waitFor();
    await shot('template');
  });

  it('creates a webhook, shows its secret once and its test delivery', async () => {
    await go('/webhooks');
    await page.getByLabel('Endpoint URL').fill(receiverUrl);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = page.locator('.notice.secret code');
    await secret.waitFor();
    const first = await secret.textContent();
    expect(first).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await page.getByRole('heading', { name: receiverUrl }).waitFor();
    const row = page.locator('tr[data-event="webhook.test"]');
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Refresh' }).click();
          return (await row.count()) ? row.locator('.badge').textContent() : null;
        },
        { interval: 500 },
      )
      .toBe('succeeded');
    expect(received.some((r) => r.body.includes('"webhook.test"'))).toBe(true);
    await shot('webhook');

    // A secret that leaked: the new one is shown once, and the old one stops signing now, not in 24 hours.
    page.once('dialog', (d) => d.accept());
    const [rotated] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/rotate-secret')),
      page.getByRole('button', { name: 'Rotate, old secret stops now' }).click(),
    ]);
    await secret.waitFor();
    expect(await secret.textContent()).toMatch(/^whsec_/);
    expect(await secret.textContent()).not.toBe(first);
    const answer = await rotated.json();
    expect(Date.parse(answer.previous_secret_expires_at)).toBeLessThanOrEqual(Date.now());
  });

  it('shows the overview and the other lists', async () => {
    await go('/');
    await page.getByRole('img', { name: 'Emails per day over the last 30 days' }).waitFor();
    await page.locator('.quota').waitFor();
    await shot('overview');
    for (const [path, heading] of [
      ['/api-keys', 'API keys'],
      ['/suppressions', 'Suppressions'],
      ['/received', 'Received emails'],
      ['/contacts', 'Contacts'],
    ]) {
      await go(path);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await expect.poll(() => page.getByRole('status').count()).toBe(0); // loaded
      expect(await page.locator('.notice.error').count(), path).toBe(0);
    }
    // The bounce put the address on the suppression list.
    await go('/suppressions');
    await page.getByText('bounced@simulator.postline.dev').waitFor();
    // A received email (injected, as test mode allows) is listed and opens with its parts.
    const inbound = await org.test.post('/v1/emails/received', {
      raw: 'From: Ann <ann@customer.example>\nTo: support@acme.example\nSubject: Where is my order?\nMessage-ID: <q1@customer.example>\nContent-Type: text/plain\n\nHello, order 42 has not arrived.\n',
    });
    expect(inbound.status, JSON.stringify(inbound.body)).toBe(201);
    await go('/received');
    await page.getByRole('link', { name: 'Where is my order?' }).click();
    await page.getByText('Hello, order 42 has not arrived.').waitFor();
    // Contacts, audiences and topics with their counts.
    const audience = await org.test.post('/v1/audiences', { name: 'Customers' });
    expect(audience.status, JSON.stringify(audience.body)).toBe(201);
    const contact = await org.test.post('/v1/contacts', { email: 'ann@customer.example', first_name: 'Ann' });
    expect(contact.status, JSON.stringify(contact.body)).toBe(201);
    expect(
      (await org.test.put(`/v1/audiences/${audience.body.id}/contacts/${contact.body.id}`)).status,
    ).toBeLessThan(300);
    await go('/contacts');
    const row = page.locator('tr', { hasText: 'Customers' });
    await row.waitFor();
    expect(await row.locator('td').nth(1).textContent()).toBe('1');
  });

  it('is usable at 375 px: nothing wider than the screen, the menu opens', async () => {
    await page.setViewportSize({ width: 375, height: 760 });
    for (const path of ['/', '/emails', '/domains', '/templates']) {
      await go(path);
      await page.locator('main h1').waitFor();
      expect(await page.evaluate(() => document.documentElement.scrollWidth), path).toBeLessThanOrEqual(375);
    }
    await page.getByRole('button', { name: 'Menu' }).click();
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await shot('mobile');
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('a test key sees only test data, a live key only live data, each marked', async () => {
    const live = await org.live.post('/v1/domains', { name: 'live-only.example' });
    expect(live.status).toBe(201);
    await go('/domains');
    await page.getByRole('link', { name: 'dash-example.com' }).waitFor();
    expect(await page.getByRole('link', { name: 'live-only.example' }).count()).toBe(0);

    await signOut();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await signIn(org.liveKey);
    expect(await page.locator('[data-mode]').getAttribute('data-mode')).toBe('live');
    await go('/domains');
    await page.getByRole('link', { name: 'live-only.example' }).waitFor();
    expect(await page.getByRole('link', { name: 'dash-example.com' }).count()).toBe(0);
    await go('/emails');
    await page.getByText('No emails yet').waitFor();
    await signOut();
  });

  it('tells a sending-only key what it cannot see', async () => {
    const key = await org.test.post('/v1/api-keys', { name: 'sender', permission: 'sending_access' });
    await signIn(key.body.key);
    await go('/emails');
    await page.getByText('This key can only send email.').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('emails');
    await signOut();
  });
});
