import type { Page } from 'playwright-core';
import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, useDashboardBrowser } from '../support/dashboard-browser.ts';
import type { TestOrg } from '../support/service.ts';

if (!hasChromium)
  console.log(
    'dashboard hostile-content tests skipped: /usr/bin/chromium is missing (apt-get install chromium)',
  );

/** Sets `top.__pwned` (and the frame's parent's) to `n` if it ever runs in a window that can reach the dashboard. */
const pwn = (n: number) => `try{top.__pwned=${n}}catch(e){};try{parent.__pwned=${n}}catch(e){}`;

/**
 * HTML an outsider writes, trying everything that would run script or reach another host from the dashboard's
 * preview: inline and event-handler script, a `javascript:` link, a refresh, frames, objects, forms, styles and
 * fonts from elsewhere.
 */
const HOSTILE_HTML = [
  `<script>${pwn(1)}</script>`,
  `<img src="x" onerror="${pwn(2)}">`,
  `<svg onload="${pwn(3)}"></svg>`,
  `<a id="js" href="javascript:${pwn(4)}">click me</a>`,
  '<meta http-equiv="refresh" content="0;url=https://tracker.example/refresh">',
  '<link rel="stylesheet" href="https://tracker.example/style.css">',
  '<style>@import url(https://tracker.example/import.css); @font-face{font-family:x;src:url(https://tracker.example/font.woff)} p{font-family:x}</style>',
  '<iframe src="https://tracker.example/frame"></iframe>',
  '<object data="https://tracker.example/object"></object>',
  '<embed src="https://tracker.example/embed">',
  '<video poster="https://tracker.example/poster.png"></video>',
  '<picture><source srcset="https://tracker.example/srcset.png"><img alt="" srcset="https://tracker.example/img-srcset.png 2x"></picture>',
  '<link rel="prefetch" href="https://tracker.example/prefetch"><link rel="preload" as="image" href="https://tracker.example/preload.png">',
  '<table background="https://tracker.example/table.png"><tr><td>cell</td></tr></table>',
  '<input type="image" src="https://tracker.example/input.png" alt="">',
  '<audio src="https://tracker.example/audio.mp3" autoplay></audio>',
  '<div style="background-image:url(https://tracker.example/bg.png)">styled</div>',
  '<form action="https://tracker.example/form"><button id="submit">go</button></form>',
  '<p>Hostile body</p>',
].join('\n');

/** A markup-looking value for a field shown as text: it must be shown as written, never parsed. */
const MARKUP = '<img src=x onerror=top.__pwned=9>';

describe.skipIf(!hasChromium)('the dashboard with content an outsider controls', () => {
  const { svc, opened, foreign, go, signIn } = useDashboardBrowser();
  let org: TestOrg;
  let page: Page;
  beforeAll(async () => {
    ({ org, page } = opened);
    await signIn(org.testKey);
  });

  const signOut = async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
  };
  const pwned = () => page.evaluate(() => (window as any).__pwned);

  /** The preview frame titled `title`: sandboxed without any allowance, the hostile HTML inert in it. */
  async function expectInert(title: string) {
    const frame = page.locator(`iframe[title="${title}"]`);
    await frame.waitFor();
    expect(await frame.getAttribute('sandbox')).toBe('');
    const inside = page.frameLocator(`iframe[title="${title}"]`);
    await inside.getByText('Hostile body').waitFor();
    await inside.locator('#js').click();
    await inside.locator('#submit').click();
    expect(await pwned()).toBeUndefined();
    expect(foreign).toEqual([]);
  }

  it("shows a received email's HTML inert, and its subject, sender and filenames as text", async () => {
    const boundary = 'b0undary';
    const raw = [
      `From: "${MARKUP}" <attacker@evil.example>`,
      'To: support@acme.example',
      `Subject: ${MARKUP}`,
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/html; charset=utf-8',
      '',
      HOSTILE_HTML,
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      `<script>${pwn(5)}</script>`,
      `--${boundary}`,
      `Content-Type: text/html; name="${MARKUP}.html"`,
      `Content-Disposition: attachment; filename="${MARKUP}.html"`,
      '',
      `<script>${pwn(6)}</script>`,
      `--${boundary}--`,
      '',
    ].join('\r\n');
    const inbound = await org.test.post('/v1/emails/received', { raw });
    expect(inbound.status, JSON.stringify(inbound.body)).toBe(201);

    await go('/received');
    await page.getByRole('link', { name: MARKUP }).click();
    await page.getByRole('heading', { name: MARKUP, level: 1 }).waitFor();
    expect(await page.locator('.facts').textContent()).toContain(MARKUP);
    expect(await page.locator('main img').count()).toBe(0);
    await page.getByText(`${MARKUP}.html`).waitFor();
    await page.getByText(`<script>${pwn(5)}</script>`).waitFor();
    await expectInert(`HTML of ${MARKUP}`);

    // Its .html attachment and its raw message: downloads only, each asked for by a click.
    await page.getByRole('button', { name: 'Get download link' }).click();
    const attachment = await download(page.getByRole('link', { name: 'Download', exact: true }));
    expect(attachment.body).toBe(`<script>${pwn(6)}</script>`);
    expect(attachment.headers['content-type']).toMatch(/^text\/html/);
    await page.getByRole('button', { name: 'Get the raw message' }).click();
    const message = await download(page.getByRole('link', { name: `Download ${inbound.body.id}.eml` }));
    expect(message.body).toBe(raw.replace(/\r?\n/g, '\r\n')); // as received: every line ending CRLF
    expect(message.headers['content-type']).toMatch(/^message\/rfc822/);
  });

  /** What a download link of the page serves, asked of the service where it listens (the link names PUBLIC_URL). */
  async function download(link: ReturnType<Page['locator']>) {
    const url = new URL((await link.getAttribute('href'))!);
    const res = await request(`${svc.baseUrl}${url.pathname}${url.search}`);
    const body = await res.body.text();
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-disposition']).toMatch(/^attachment;/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    return { body, headers: res.headers };
  }

  it("shows a sent email's HTML inert, and serves its .html attachment as a download only", async () => {
    const sent = await org.test.post('/v1/emails', {
      from: 'Acme <hello@acme.example>',
      to: ['delivered@simulator.postline.dev'],
      subject: 'Hostile sent',
      html: HOSTILE_HTML,
      attachments: [
        {
          filename: 'page.html',
          content: Buffer.from(`<script>${pwn(7)}</script>`).toString('base64'),
          content_type: 'text/html',
        },
      ],
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await go(`/emails/${sent.body.id}`);
    await expectInert('HTML part of Hostile sent');

    await page.getByRole('button', { name: 'Get download link' }).click();
    const attachment = await download(page.getByRole('link', { name: 'Download', exact: true }));
    expect(attachment.body).toBe(`<script>${pwn(7)}</script>`);
    expect(attachment.headers['content-type']).toMatch(/^text\/html/);
  });

  it('loads remote images only when asked, and still runs no script', async () => {
    const sent = await org.test.post('/v1/emails', {
      from: 'Acme <hello@acme.example>',
      to: ['delivered@simulator.postline.dev'],
      subject: 'Remote images',
      html: `<p>Hostile body</p><img src="https://tracker.example/pixel.png" onerror="${pwn(10)}"><script>${pwn(11)}</script>`,
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await go(`/emails/${sent.body.id}`);
    const frame = page.frameLocator('iframe[title="HTML part of Remote images"]');
    await frame.getByText('Hostile body').waitFor();
    expect(foreign).toEqual([]);
    await page.getByRole('button', { name: 'Load remote images' }).click();
    await expect.poll(() => foreign).toEqual(['https://tracker.example/pixel.png']);
    // The aborted image has failed (its onerror would have run by now, had the frame allowed script).
    await expect
      .poll(() => frame.locator('img').evaluate((img: HTMLImageElement) => img.complete))
      .toBe(true);
    expect(await pwned()).toBeUndefined();
    foreign.length = 0; // the one request the test asked for
  });

  it("previews a template's HTML inert", async () => {
    const t = await org.test.post('/v1/templates', {
      name: 'Hostile template',
      subject: 'Hi',
      html: HOSTILE_HTML,
    });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    await go(`/templates/${t.body.id}`);
    await expectInert('Template preview');
  });

  it('shows a contact whose names are markup as text', async () => {
    const c = await org.test.post('/v1/contacts', {
      email: 'mallory@evil.example',
      first_name: MARKUP,
      last_name: 'x'.repeat(256),
    });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    await go('/contacts');
    await page.getByText('mallory@evil.example').waitFor();
    expect(await page.locator('tr', { hasText: 'mallory@evil.example' }).textContent()).toContain(MARKUP);
    expect(await pwned()).toBeUndefined();
  });

  it("says why a screen's item cannot be shown, in the API's words", async () => {
    await go('/emails/em_nope');
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/not found|no email/i);
  });

  it('keeps very long values on a 375 px screen', async () => {
    const long = 'x'.repeat(400);
    const raw = [
      `From: ${long}@evil.example`,
      'To: support@acme.example',
      `Subject: ${long}`,
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      long,
      '--b',
      'Content-Type: text/plain',
      `Content-Disposition: attachment; filename="${long.slice(0, 200)}.txt"`,
      '',
      'x',
      '--b--',
      '',
    ].join('\r\n');
    const inbound = await org.test.post('/v1/emails/received', { raw });
    expect(inbound.status, JSON.stringify(inbound.body)).toBe(201);
    const sent = await org.test.post('/v1/emails', {
      from: `Acme <hello@acme.example>`,
      to: [`${'y'.repeat(60)}@simulator.postline.dev`],
      subject: long,
      text: long,
      headers: { 'X-Long': long },
      tags: ['t'.repeat(60)],
      attachments: [{ filename: `${long.slice(0, 200)}.txt`, content: Buffer.from('x').toString('base64') }],
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await page.setViewportSize({ width: 375, height: 760 });
    try {
      for (const path of [
        `/emails/${sent.body.id}`,
        `/received/${inbound.body.id}`,
        '/received',
        '/contacts',
        '/emails',
      ]) {
        await go(path);
        await page.locator('main h1').waitFor();
        await expect.poll(() => page.getByRole('status').count()).toBe(0);
        if (path.includes(inbound.body.id) || path.includes(sent.body.id))
          await page.getByText(`${long.slice(0, 200)}.txt`).waitFor();
        expect(await page.evaluate(() => document.documentElement.scrollWidth), path).toBeLessThanOrEqual(
          375,
        );
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
  });

  it('signs out when its key is revoked, and keeps the key out of URLs and localStorage', async () => {
    const created = await org.test.post('/v1/api-keys', { name: 'doomed', permission: 'full_access' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await signOut();
    await signIn(created.body.key);
    expect(page.url()).not.toContain(created.body.key);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect((await org.test.delete(`/v1/api-keys/${created.body.id}`)).status).toBeLessThan(300);
    // The next request is refused: the tab forgets the key and says why.
    await page.getByRole('link', { name: 'Emails' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/^Signed out: .*key/i);
    await signIn(org.testKey);
  });

  it('serves the page with headers against framing, sniffing and leaking the address', async () => {
    const res = await request(`${svc.baseUrl}/received/re_x`, { headers: { accept: 'text/html' } });
    await res.body.text();
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
  });
});
