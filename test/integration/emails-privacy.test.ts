import { Writable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCommand } from '../../bin/cli/commands.ts';
import { ManualClock } from '../../platform/clock.ts';
import { DeliveryProcess } from '../../processes/delivery/delivery.process.ts';
import { EMAIL_RETRIES } from '../../processes/retry-schedule.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain, recipientDomainOnLoopback } from '../support/domains.ts';
import { emailHistory, readEmail } from '../support/emails.ts';
import { parseMime } from '../support/mime.ts';
import type { TestOrg } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';
import { appendSourceEvent } from '../support/webhook-receiver.ts';

/**
 * What the API and the log keep of an email's recipients and readers: public event names and shapes, no IP
 * address or user agent unless the organization asks for them (and then sealed), tracking links that show
 * nothing of the organization. Live delivery through the outbound MTA to an SMTP server on loopback.
 */
let mx: SmtpSink;
let acme: TestOrg;
let delivery: DeliveryProcess;
const clock = new ManualClock('2026-07-01T09:00:00Z');
const FROM = 'Acme <news@acme-private.test>';
const LINK = 'https://acme.example/welcome';

beforeAll(async () => {
  mx = await startSmtpSink();
});
const { svc, dns } = useDnsService(() => ({
  clock,
  env: { OUTBOUND_SMTP_PORT: String(mx.port), OUTBOUND_TLS_REJECT_UNAUTHORIZED: 'false' },
}));
beforeAll(async () => {
  recipientDomainOnLoopback(dns);
  acme = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, dns, 'acme-private.test', { open_tracking: true, click_tracking: true });
  delivery = new DeliveryProcess(svc.postline.services);
});
afterAll(async () => {
  await delivery?.stop();
  await mx?.close();
});
beforeEach(() => mx.reset());

/** Sends a tracked email to `to` and delivers it; answers its id and the tracking links as delivered. */
async function sendDelivered(to: string) {
  const r = await acme.live.post('/v1/emails', {
    from: FROM,
    to: [to],
    subject: 'Hello',
    html: `<html><body><p><a href="${LINK}">welcome</a></p></body></html>`,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  await delivery.runOnce();
  const html = parseMime(mx.messages.at(-1)!.raw)
    .parts.find((p) => p.contentType === 'text/html')!
    .body.toString();
  const click = /href="https:\/\/track\.acme-private\.test(\/t\/c\/[^"]+)"/.exec(html)?.[1];
  const pixel = /src="https:\/\/track\.acme-private\.test(\/t\/o\/[^"]+)"/.exec(html)?.[1];
  expect(click && pixel, html).toBeTruthy();
  return { id: r.body.id as string, click: click!, pixel: pixel! };
}

/** Opens the pixel and follows the link, as a mail client called `userAgent` would. */
async function openAndClick(links: { click: string; pixel: string }, userAgent: string) {
  for (const path of [links.pixel, links.click]) {
    const r = await request(`${svc.baseUrl}${path}`, { headers: { 'user-agent': userAgent } });
    expect(r.statusCode).toBe(path === links.click ? 302 : 200);
    await r.body.dump();
  }
}

/** GET /v1/emails/{id}/events once the email's last event is in the read model. */
async function events(id: string) {
  await readEmail(svc, acme.live, id);
  const r = await acme.live.get(`/v1/emails/${id}/events`);
  expect(r.status).toBe(200);
  return r.body.data as any[];
}

/** The data of the email's open and click events as the log's rows hold them, as text. */
async function rawEngagementRows(id: string): Promise<string[]> {
  const { rows } = await svc.postline.services.db.query<{ data: string }>(
    `SELECT data::text AS data FROM events
     WHERE stream_id = $1 AND type IN ('EmailOpened', 'EmailClicked') ORDER BY stream_revision`,
    [`email-${id}`],
  );
  return rows.map((r) => r.data);
}

/** Runs a CLI command inside the running service, as `postline` does; answers its exit code and output. */
async function cli(...argv: string[]) {
  let output = '';
  const out = new Writable({
    write(chunk, _encoding, done) {
      output += chunk.toString();
      done();
    },
  });
  const code = await runCommand(argv, svc.postline, out);
  return { code, output };
}

describe('an email history for the public', () => {
  it('names events as webhooks do and shows no IP address or user agent of who opened or clicked', async () => {
    const { id, ...links } = await sendDelivered('ann@rcpt.test');
    // An open recorded by an earlier version, which kept the reader's client in clear in the log.
    await appendSourceEvent(
      svc.postline.services.store,
      `email-${id}`,
      'EmailOpened',
      { emailId: id, userAgent: 'LegacyMail/0.9', ip: '198.51.100.7', openedAt: clock.now().toISOString() },
      { orgId: acme.orgId, mode: 'live' },
    );
    await openAndClick(links, 'PrivacyMail/1.0');

    const history = await events(id);
    expect(history.map((e) => e.type)).toEqual([
      'email.queued',
      'email.sending',
      'email.sent',
      'email.delivered',
      'email.opened',
      'email.opened',
      'email.clicked',
    ]);
    expect(history.every((e) => e.object === 'email_event')).toBe(true);
    expect(history[2].data).toEqual({ message_id: `<${id}@acme-private.test>` });
    expect(history[3]).toMatchObject({
      recipient: 'ann@rcpt.test',
      data: {
        attempt: 1,
        smtp_code: 250,
        smtp_response: expect.stringMatching(/^250/),
        mx: 'mx.rcpt.test',
        tls: false, // the sink offers no STARTTLS
      },
    });
    expect(history[4]).toMatchObject({ recipient: null, data: { ip: null, user_agent: null } });
    expect(history[5]).toMatchObject({ recipient: null, data: { ip: null, user_agent: null } });
    expect(history[6]).toMatchObject({ data: { link: LINK, ip: null, user_agent: null } });
    // Nothing internal or personal beyond what each type documents: no content, organization, actor or client.
    const text = JSON.stringify(history);
    const leaks = [
      '127.0.0.1',
      'PrivacyMail',
      'LegacyMail',
      '198.51.100.7',
      acme.orgId,
      'Hello',
      'actor',
      'key_',
      'orgId',
    ];
    for (const leak of leaks) expect(text).not.toContain(leak);

    // Nor does the log keep them now: this organization did not ask for client details.
    for (const row of (await rawEngagementRows(id)).slice(1)) {
      expect(row).not.toContain('127.0.0.1');
      expect(row).not.toContain('PrivacyMail');
    }

    const email = await readEmail(svc, acme.live, id);
    expect(email.last_event).toBe('email.clicked');
    expect(email.recipients[0]).toMatchObject({
      email: 'ann@rcpt.test',
      status: 'delivered',
      attempts: 1,
      smtp_code: 250,
      smtp_response: expect.stringMatching(/^250/),
    });
    const listed = (await acme.live.get('/v1/emails')).body.data.find((e: any) => e.id === id);
    expect(listed.last_event).toBe('email.clicked');
  });

  it('shows the attempt that failed and the one that delivered, with its 250', async () => {
    mx.scriptRecipient('later@rcpt.test', { code: 451, message: '4.3.0 try again later' });
    const r = await acme.live.post('/v1/emails', {
      from: FROM,
      to: ['later@rcpt.test'],
      subject: 'Hi',
      text: 'x',
    });
    await delivery.runOnce();
    clock.advance(EMAIL_RETRIES.delaysMs[0]);
    await delivery.runOnce();
    const history = await events(r.body.id);
    expect(history.filter((e) => e.recipient === 'later@rcpt.test')).toEqual([
      {
        object: 'email_event',
        type: 'email.delivery_delayed',
        created_at: expect.any(String),
        recipient: 'later@rcpt.test',
        data: {
          source: 'attempt',
          attempt: 1,
          next_attempt_at: expect.any(String),
          smtp_code: 451,
          smtp_response: expect.stringMatching(/^451/),
          classification: 'transient',
        },
      },
      {
        object: 'email_event',
        type: 'email.delivered',
        created_at: expect.any(String),
        recipient: 'later@rcpt.test',
        data: {
          attempt: 2,
          smtp_code: 250,
          smtp_response: expect.stringMatching(/^250/),
          mx: expect.any(String),
          tls: expect.any(Boolean),
        },
      },
    ]);
    const email = await readEmail(svc, acme.live, r.body.id);
    expect(email.last_event).toBe('email.delivered');
    expect(email.recipients[0]).toMatchObject({ status: 'delivered', attempts: 2, smtp_code: 250 });
  });
});

describe('tracking links', () => {
  it('show nothing of the organization, the email or the link when decoded', async () => {
    const { id, click, pixel } = await sendDelivered('bob@rcpt.test');
    for (const path of [click, pixel]) {
      const token = path.replace(/^\/t\/[oc]\//, '').replace(/\.gif$/, '');
      const decoded = Buffer.from(token.split('.')[0], 'base64url').toString('latin1');
      for (const leak of [acme.orgId, 'org_', id, 'live', 'acme.example'])
        expect(decoded).not.toContain(leak);
    }
  });
});

describe("an organization's opt-in to client details", () => {
  it('shows the IP address and user agent, sealed in the log, and erases them on request', async () => {
    const on = await cli('orgs', 'set-client-details', acme.orgId, 'on');
    expect(on).toMatchObject({ code: 0, output: expect.stringContaining('records') });
    expect((await cli('orgs', 'list')).output).toContain('client details on');

    const { id, ...links } = await sendDelivered('cleo@rcpt.test');
    await openAndClick(links, 'OptedInMail/2.0');
    const client = { ip: expect.stringMatching(/127\.0\.0\.1$/), user_agent: 'OptedInMail/2.0' };
    const shown = await events(id);
    expect(shown.find((e) => e.type === 'email.opened').data).toEqual(client);
    expect(shown.find((e) => e.type === 'email.clicked').data).toEqual({ link: LINK, ...client });

    // Sealed: the log's rows hold neither the address nor the user agent in clear.
    const rows = await rawEngagementRows(id);
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(JSON.parse(row).client).toMatch(/^pd1\./);
      expect(row).not.toContain('127.0.0.1');
      expect(row).not.toContain('OptedInMail');
    }

    // Off, with the recorded details forgotten: the events stay, what they held of the reader is gone.
    const off = await cli('orgs', 'set-client-details', acme.orgId, 'off', '--forget');
    expect(off).toMatchObject({ code: 0, output: expect.stringContaining('Erased the client details of 1') });
    const erased = await events(id);
    expect(erased.map((e) => e.type)).toEqual(shown.map((e) => e.type));
    expect(erased.find((e) => e.type === 'email.opened').data).toEqual({ ip: null, user_agent: null });

    // And from now on nothing is recorded.
    await openAndClick(links, 'OptedInMail/2.0');
    const later = (await emailHistory(svc, id)).filter((e) => e.type === 'EmailOpened');
    expect(later).toHaveLength(2);
    expect(later[1].data).toEqual({ emailId: id, openedAt: expect.any(String) });

    // On again: that email's details stay forgotten (its key is never made again); the open is recorded without.
    await cli('orgs', 'set-client-details', acme.orgId, 'on');
    await openAndClick(links, 'OptedInMail/2.0');
    const again = (await emailHistory(svc, id)).filter((e) => e.type === 'EmailOpened');
    expect(again).toHaveLength(3);
    expect(again[2].data).toEqual({ emailId: id, openedAt: expect.any(String) });
  });

  it('is refused for an unknown organization and a setting that is not on or off', async () => {
    // Said on standard error, exit code 1 (bin/main.ts): runCommand throws it.
    await expect(cli('orgs', 'set-client-details', 'org_nope', 'on')).rejects.toThrow(
      /No organization org_nope/,
    );
    await expect(cli('orgs', 'set-client-details', acme.orgId, 'maybe')).rejects.toThrow(/on\|off/);
  });
});
