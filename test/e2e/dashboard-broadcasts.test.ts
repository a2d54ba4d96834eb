import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, fieldError, hasChromium, useDashboardBrowser } from '../support/dashboard-browser.ts';
import type { TestOrg } from '../support/service.ts';

// The dashboard's broadcasts screen, and what dashboard.test.ts does not reach: a scheduled email rescheduled
// and canceled, a domain's impressum, a webhook delivery sent again. Same rules: Chromium from Debian, every
// request to another host fails the test.

if (!hasChromium)
  console.log(`dashboard broadcast tests skipped: ${CHROMIUM} is missing (apt-get install chromium)`);

/** `YYYY-MM-DDTHH:mm` in this machine's time zone (the browser's), as a datetime-local input takes it. */
function localInput(d: Date) {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
/** A whole minute `days` days from now. */
function daysAhead(days: number) {
  const d = new Date(Date.now() + days * 86_400_000);
  d.setSeconds(0, 0);
  return d;
}

describe.skipIf(!hasChromium)('the dashboard in a real browser: broadcasts and the rest', () => {
  const { svc, opened, received, go, shot, signIn } = useDashboardBrowser();
  let org: TestOrg;
  let page: Page;
  let receiverUrl: string;
  beforeAll(async () => {
    ({ org, page, receiverUrl } = opened);
    await signIn(org.testKey);
  });

  const ok = <T extends { status: number; body: any }>(r: T, status = 200) => {
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    return r.body;
  };
  const count = (name: string) => page.locator(`[data-count="${name}"] strong`).textContent();
  /** Accepts the next confirm() the page shows. */
  const acceptNextDialog = () => page.once('dialog', (d) => d.accept());

  let audienceId: string;

  it('creates a broadcast to an audience of two, shows a field error beside its field, sends it to sent', async () => {
    audienceId = ok(await org.test.post('/v1/audiences', { name: 'Newsletter' }), 201).id;
    for (const [email, first_name] of [
      ['delivered+ann@simulator.postline.dev', 'Ann'],
      ['bounced+bob@simulator.postline.dev', 'Bob'],
    ]) {
      const contact = ok(await org.test.post('/v1/contacts', { email, first_name }), 201);
      expect((await org.test.put(`/v1/audiences/${audienceId}/contacts/${contact.id}`)).status).toBeLessThan(
        300,
      );
    }

    await go('/broadcasts');
    await page.getByText('No broadcasts yet').waitFor();
    await page.getByRole('link', { name: 'New broadcast' }).click();
    await page.getByRole('heading', { name: 'New broadcast', level: 1 }).waitFor();
    await page.getByLabel('Name').fill('September news');
    await page.getByLabel('Audience').selectOption({ label: 'Newsletter' });
    // The audience's contact count, from GET /v1/audiences/{id}.
    await page.getByText('2 contacts now').waitFor();
    await page.getByLabel('From').fill('Acme <news@acme.example>');
    await page.getByLabel('Subject').fill('Hello {{contact.first_name}}');
    // A variable a broadcast does not have: the API names `html`, and the message is shown beneath it.
    await page.getByLabel('HTML').fill('<p>Hi {{first_name}}</p>');
    await page.getByRole('button', { name: 'Create draft' }).click();
    await fieldError(page, 'html', '`first_name`', 'HTML');
    expect(await page.getByLabel('Subject').getAttribute('aria-invalid')).toBe('false');

    await page
      .getByLabel('HTML')
      .fill('<p>Hi {{contact.first_name}}</p><p><a href="{{unsubscribe_url}}">Unsubscribe</a></p>');
    await page.getByLabel('Text').fill('Hi {{contact.first_name}}');
    await page.getByRole('button', { name: 'Create draft' }).click();
    await page.getByRole('heading', { name: /September news/, level: 1 }).waitFor();
    const id = /\/broadcasts\/(bc_[0-9a-z]+)$/.exec(page.url())![1];
    expect(ok(await org.test.get(`/v1/broadcasts/${id}`))).toMatchObject({
      status: 'draft',
      audience_id: audienceId,
      subject: 'Hello {{contact.first_name}}',
      template_id: null,
    });
    // The draft can still be edited; sending waits for unsaved changes.
    await page.getByLabel('Reply-to (optional)').fill('help@acme.example');
    await expect.poll(() => page.getByRole('button', { name: 'Send now' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Save draft' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Send now' }).isDisabled()).toBe(false);
    expect(ok(await org.test.get(`/v1/broadcasts/${id}`)).reply_to).toEqual(['help@acme.example']);
    expect(await page.locator('.send-panel').textContent()).toContain('Test mode:');
    await shot('broadcast-draft');

    acceptNextDialog();
    await page.getByRole('button', { name: 'Send now' }).click();
    // The page follows the broadcast while it goes out and while its emails get their outcomes.
    await expect.poll(() => page.locator('h1 .badge').textContent()).toBe('sent');
    await expect.poll(() => count('recipients')).toBe('2');
    await expect.poll(() => count('delivered')).toBe('1');
    await expect.poll(() => count('bounced')).toBe('1');
    expect(await count('sent')).toBe('2');
    expect(await count('queued')).toBe('0');
    expect(await page.locator('[data-progress="contacts_processed"] strong').textContent()).toBe('2');
    expect(await page.locator('[data-skipped="unsubscribed"] strong').textContent()).toBe('0');
    await shot('broadcast');

    await go('/broadcasts');
    const row = page.locator(`tr[data-broadcast="${id}"]`);
    await row.waitFor();
    expect(await row.locator('.badge').textContent()).toBe('sent');
    expect(await row.locator('td.recipients').textContent()).toBe('2');
    await expect.poll(() => row.textContent()).toContain('Newsletter'); // the audience's name, loaded beside
  });

  /** A draft to the audience of the first test, made through the API. */
  const draft = (name: string) =>
    org.test.post('/v1/broadcasts', {
      name,
      audience_id: audienceId,
      from: 'news@acme.example',
      subject: 'Later',
      text: 'Hi {{contact.first_name}}',
    });

  it('schedules a draft and cancels it; deletes another draft', async () => {
    const later = ok(await draft('October news'), 201);
    const gone = ok(await draft('Scrapped news'), 201);

    await go(`/broadcasts/${later.id}`);
    await page.getByRole('heading', { name: /October news/, level: 1 }).waitFor();
    const when = daysAhead(2);
    await page.getByLabel('Send at (your time zone)').fill(localInput(when));
    await page.getByRole('button', { name: 'Schedule' }).click();
    await expect.poll(() => page.locator('h1 .badge').textContent()).toBe('scheduled');
    expect(ok(await org.test.get(`/v1/broadcasts/${later.id}`)).send_at).toBe(when.toISOString());
    // Canceled, it is a draft again: its form is back, to change and schedule anew.
    await page.getByRole('button', { name: 'Cancel schedule' }).click();
    await expect.poll(() => page.locator('h1 .badge').textContent()).toBe('draft');
    await page.getByRole('button', { name: 'Save draft' }).waitFor();
    expect(ok(await org.test.get(`/v1/broadcasts/${later.id}`))).toMatchObject({
      status: 'draft',
      send_at: null,
    });

    await go(`/broadcasts/${gone.id}`);
    await page.getByRole('heading', { name: /Scrapped news/, level: 1 }).waitFor();
    acceptNextDialog();
    await page.getByRole('button', { name: 'Delete draft' }).click();
    await page.getByRole('heading', { name: 'Broadcasts', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'October news' }).waitFor();
    expect(await page.getByRole('link', { name: 'Scrapped news' }).count()).toBe(0);
    expect((await org.test.get(`/v1/broadcasts/${gone.id}`)).status).toBe(404);
  });

  it('stops a broadcast while it is sending', async () => {
    const b = ok(await draft('Sent by mistake'), 201);
    // Its expansion held by a claim of an hour, as another process's would: it stays `sending` until stopped.
    await svc.postline.services.db.query(
      `INSERT INTO broadcast_expansions (broadcast_id, due_at, claimed_until) VALUES ($1, now(), now() + interval '1 hour')`,
      [b.id],
    );
    expect(ok(await org.test.post(`/v1/broadcasts/${b.id}/send`, {})).status).toBe('sending');
    await go(`/broadcasts/${b.id}`);
    await expect.poll(() => page.locator('h1 .badge').textContent()).toBe('sending');
    acceptNextDialog();
    await page.getByRole('button', { name: 'Stop sending' }).click();
    await expect.poll(() => page.locator('h1 .badge').textContent()).toBe('canceled');
    expect(await page.getByRole('button', { name: 'Stop sending' }).count()).toBe(0);
    expect(ok(await org.test.get(`/v1/broadcasts/${b.id}`))).toMatchObject({
      status: 'canceled',
      canceled_at: expect.any(String),
      counts: { recipients: 0, canceled: 0 },
    });
  });

  it('offers published templates and topics in the form', async () => {
    ok(await org.test.post('/v1/topics', { name: 'Product updates', default_subscription: 'opt_in' }), 201);
    const template = ok(
      await org.test.post('/v1/templates', {
        name: 'Monthly',
        subject: 'Our month',
        html: '<p>Hi {{contact.first_name}}</p>',
        variables: [
          { name: 'contact', type: 'object', required: false },
          { name: 'unsubscribe_url', type: 'string', required: false },
        ],
      }),
      201,
    );
    ok(await org.test.post(`/v1/templates/${template.id}/publish`));
    await go('/broadcasts/new');
    await page.getByLabel('Name').fill('From a template');
    await page.getByLabel('Audience').selectOption({ label: 'Newsletter' });
    await page.getByLabel('Topic (optional)').selectOption({ label: 'Product updates' });
    await page.getByLabel('From').fill('news@acme.example');
    await page.getByLabel('Use a template').check();
    await page.getByLabel('Template', { exact: true }).selectOption({ label: 'Monthly' });
    await page.getByRole('button', { name: 'Create draft' }).click();
    await page.getByRole('heading', { name: /From a template/, level: 1 }).waitFor();
    const id = /\/broadcasts\/(bc_[0-9a-z]+)$/.exec(page.url())![1];
    expect(ok(await org.test.get(`/v1/broadcasts/${id}`))).toMatchObject({
      template_id: template.id,
      topic_id: expect.stringMatching(/^top_/),
      subject: null,
      html: null,
      text: null,
    });
    // Back to content of its own: the template goes.
    await page.getByLabel('Write it here').check();
    await page.getByLabel('Subject').fill('Own words');
    await page.getByLabel('Text').fill('Hello');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await expect.poll(async () => (await org.test.get(`/v1/broadcasts/${id}`)).body.template_id).toBe(null);
    expect(ok(await org.test.get(`/v1/broadcasts/${id}`))).toMatchObject({
      subject: 'Own words',
      text: 'Hello',
    });
  });

  it('reschedules a scheduled email, then cancels it', async () => {
    // One time, read once: read again later it may have passed into the next minute.
    const sendAt = daysAhead(1);
    const email = ok(
      await org.test.post('/v1/emails', {
        from: 'hello@acme.example',
        to: ['delivered@simulator.postline.dev'],
        subject: 'Reminder for later',
        text: 'Later',
        send_at: sendAt.toISOString(),
      }),
    );
    await go(`/emails/${email.id}`);
    await page.getByRole('heading', { name: 'Reminder for later' }).waitFor();
    expect(await page.locator('.facts .badge').first().textContent()).toBe('scheduled');
    const input = page.getByLabel('Send at (your time zone)');
    expect(await input.inputValue()).toBe(localInput(sendAt));
    const next = daysAhead(3);
    await input.fill(localInput(next));
    await page.getByRole('button', { name: 'Reschedule' }).click();
    await expect
      .poll(async () => (await org.test.get(`/v1/emails/${email.id}`)).body.send_at)
      .toBe(next.toISOString());
    await page.getByRole('button', { name: 'Cancel email' }).click();
    await expect.poll(() => page.locator('.facts .badge').first().textContent()).toBe('canceled');
    expect(await page.getByRole('button', { name: 'Reschedule' }).count()).toBe(0);
    expect(ok(await org.test.get(`/v1/emails/${email.id}`)).status).toBe('canceled');
  });

  it("saves a domain's impressum, with a field's error beside it", async () => {
    const domain = ok(await org.test.post('/v1/domains', { name: 'impressum-example.com' }), 201);
    await go(`/domains/${domain.id}`);
    await page.getByRole('heading', { name: /impressum-example\.com/ }).waitFor();
    await page.getByLabel('Company name').fill('Acme GmbH');
    await page.getByLabel('Address').fill('Hauptstraße 1, 10115 Berlin');
    await page.getByLabel('Country (ISO code, e.g. DE)').fill('Germany');
    await page.getByLabel('Contact email').fill('legal@acme.example');
    await page.getByRole('button', { name: 'Save impressum' }).click();
    const error = await fieldError(page, 'impressum-country', 'ISO 3166-1', 'Country (ISO code, e.g. DE)');

    await page.getByLabel('Country (ISO code, e.g. DE)').fill('de');
    await page.getByRole('button', { name: 'Save impressum' }).click();
    await page.getByRole('button', { name: 'Remove impressum' }).waitFor();
    expect(await error.count()).toBe(0);
    expect(ok(await org.test.get(`/v1/domains/${domain.id}`)).impressum).toMatchObject({
      company_name: 'Acme GmbH',
      address: 'Hauptstraße 1, 10115 Berlin',
      country: 'DE',
      email: 'legal@acme.example',
    });
  });

  it('sends a webhook delivery again on Retry, with the same webhook-id', async () => {
    const hook = ok(
      await org.test.post('/v1/webhooks', { url: receiverUrl, events: ['email.delivered'] }),
      201,
    );
    await go(`/webhooks/${hook.id}`);
    const row = page.locator('tr[data-event="webhook.test"]');
    const status = async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      return (await row.count()) ? row.locator('.badge').textContent() : null;
    };
    await expect.poll(status, { interval: 500 }).toBe('succeeded');
    const firstId = received.find((r) => r.body.includes('"webhook.test"'))!.id;
    expect(received.filter((r) => r.id === firstId)).toHaveLength(1);

    await row.getByRole('button', { name: 'Retry' }).click();
    await page.getByText('will be sent again').waitFor();
    await expect.poll(() => received.filter((r) => r.id === firstId).length).toBe(2);
    await expect.poll(status, { interval: 500 }).toBe('succeeded');
    await row.locator('summary').click();
    await row.getByText('attempt 2:').waitFor();
    // What the receiver answered each time, as text.
    for (const attempt of [1, 2])
      expect(await row.locator(`[data-answer-to="${attempt}"]`).textContent()).toBe(`<b>got ${firstId}</b>`);
  });

  it('with a live key: says live mode, and a refused send names its field', async () => {
    const audience = ok(await org.live.post('/v1/audiences', { name: 'Live readers' }), 201);
    const draft = ok(
      await org.live.post('/v1/broadcasts', {
        name: 'Live news',
        audience_id: audience.id,
        from: 'news@not-ours.example',
        subject: 'Hello',
        text: 'Hi',
      }),
      201,
    );
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').fill(org.liveKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    await go('/broadcasts');
    await page.getByRole('link', { name: 'Live news' }).waitFor();
    expect(await page.getByRole('link', { name: 'September news' }).count()).toBe(0); // test data stays apart
    await page.getByRole('link', { name: 'Live news' }).click();
    await page.locator('.send-panel').getByText('Live mode:').waitFor();
    acceptNextDialog();
    await page.getByRole('button', { name: 'Send now' }).click();
    await fieldError(page, 'from', 'not a domain of this organization');
    expect(ok(await org.live.get(`/v1/broadcasts/${draft.id}`)).status).toBe('draft');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').fill(org.testKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
  });

  it('is usable at 375 px', async () => {
    await page.setViewportSize({ width: 375, height: 760 });
    const list = ok(await org.test.get('/v1/broadcasts'));
    const sent = list.data.find((b: any) => b.status === 'sent');
    const draft = list.data.find((b: any) => b.status === 'draft');
    for (const path of [
      '/broadcasts',
      '/broadcasts/new',
      `/broadcasts/${sent.id}`,
      `/broadcasts/${draft.id}`,
    ]) {
      await go(path);
      await page.locator('main h1').waitFor();
      await expect.poll(() => page.getByText(/^Loading/).count()).toBe(0);
      expect(await page.evaluate(() => document.documentElement.scrollWidth), path).toBeLessThanOrEqual(375);
    }
    // Keyboard: the form's controls are reached with Tab, in order.
    await go('/broadcasts/new');
    await page.getByLabel('Name').focus();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('f-audience_id');
    await page.setViewportSize({ width: 1280, height: 860 });
  });
});
