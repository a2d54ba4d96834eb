import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { addVerifiedDomain, domainEnv } from '../support/domains.ts';
import { mxClient, receivedWithSubject } from '../support/inbound.ts';
import { hasRspamd, startRspamd, type TestRspamd } from '../support/rspamd.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

/**
 * With RSPAMD_URL set, a real rspamd scores what the MX receives; without an answer from it, Postline scores the
 * message itself and takes it all the same.
 */
if (!hasRspamd)
  console.log('rspamd not installed (.ci/run installs it): the rspamd tests of the MX are skipped');

describe.skipIf(!hasRspamd)('the MX with rspamd', () => {
  let dns: TestDnsServer;
  let rspamd: TestRspamd;
  let acme: TestOrg;
  const DOMAIN = 'acme-spam.test';

  beforeAll(async () => {
    dns = await startDnsServer();
    rspamd = await startRspamd(dns.serverAddress);
  }, 150_000);
  const svc = useTestService(() => ({
    processes: true,
    env: { ...domainEnv(dns), SMTP_MX_PORT: '0', RSPAMD_URL: rspamd.url, INBOUND_SPAM_THRESHOLD: '3' },
  }));
  beforeAll(async () => {
    acme = await svc.createOrg('pro');
    await addVerifiedDomain(acme.live, dns, DOMAIN, { inbound_enabled: true });
  });
  afterAll(async () => {
    await rspamd?.close();
    await dns?.close();
  });

  const send = (raw: string) =>
    mxClient(svc.postline.smtp!.mxPort!).sendMail({
      envelope: { from: 'ann@remote.test', to: [`help@${DOMAIN}`] },
      raw,
    });
  const received = (subject: string) => receivedWithSubject(acme.live, subject);

  it("records rspamd's score, and is_spam from INBOUND_SPAM_THRESHOLD", async () => {
    // No Date and no Message-ID: rspamd's MISSING_DATE and MISSING_MID.
    const raw = `From: ann@remote.test\r\nTo: help@${DOMAIN}\r\nSubject: Scored by rspamd\r\n\r\nhello\r\n`;
    expect((await send(raw)).response).toBe('250 2.0.0 Ok: received');
    const email = await received('Scored by rspamd');
    // What rspamd itself says of the message as the MX passed it on (the same bytes, client and envelope).
    const link = new URL((await acme.live.get(`/v1/emails/received/${email.id}/raw`)).body.download_url);
    const stored = await (await fetch(`${svc.baseUrl}${link.pathname}${link.search}`)).arrayBuffer();
    const direct = await (
      await fetch(`${rspamd.url}/checkv2`, {
        method: 'POST',
        body: Buffer.from(stored),
        headers: { IP: '127.0.0.1', Helo: 'mx.remote.test', From: 'ann@remote.test', Rcpt: `help@${DOMAIN}` },
      })
    ).json();
    expect(direct.symbols).toHaveProperty('MISSING_MID');
    expect(email.spam_score).toBeCloseTo(direct.score, 1);
    expect(email.spam_score).toBeGreaterThanOrEqual(3);
    expect(email.is_spam).toBe(true);
  });

  it('scores the message itself, and takes it, when rspamd does not answer', async () => {
    await rspamd.close();
    const raw = `From: ann@remote.test\r\nTo: help@${DOMAIN}\r\nSubject: rspamd is away\r\n\r\nhello\r\n`;
    expect((await send(raw)).response).toBe('250 2.0.0 Ok: received');
    // Postline's own rules: no Date (0.5) and no Message-ID (1).
    expect(await received('rspamd is away')).toMatchObject({ spam_score: 1.5, is_spam: false });
  });
});
