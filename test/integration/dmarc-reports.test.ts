import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { dmarcReportsProjection } from '../../projections/dmarc-reports.projection.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { purgeDomain } from '../../write-side/domains/domain.commands.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import { mxClient } from '../support/inbound.ts';
import { PATIENCE } from '../support/patience.ts';
import { rawSmtp } from '../support/raw-smtp.ts';
import type { TestOrg } from '../support/service.ts';

/**
 * DMARC aggregate reports as the large receivers send them (test/fixtures/dmarc/): mailed to the domain's `rua`
 * address on the MX, read, and listed by `GET /v1/domains/{id}/dmarc-reports` per reporter and day, each source
 * marked as Postline's (POSTLINE_OUTBOUND_IPS) or not.
 */

const fixture = (name: string) => readFileSync(new URL(`../fixtures/dmarc/${name}`, import.meta.url));
const REPORTS = [
  ['google.com', 'google.com!acme-dmarc.test!1795564800!1795651199.zip', 'application/zip'],
  [
    'enterprise.protection.outlook.com',
    'enterprise.protection.outlook.com!acme-dmarc.test!1795651200!1795737600.xml.gz',
    'application/gzip',
  ],
  ['yahoo.com', 'yahoo.com!acme-dmarc.test!1795737600!1795823999.xml.gz', 'application/gzip'],
] as const;

let acme: TestOrg;
let mxPort: number;
let domainId: string;
let rua: string;
const { svc, dns } = useDnsService({ env: { SMTP_MX_PORT: '0', POSTLINE_OUTBOUND_IPS: '192.0.2.10' } });
beforeAll(async () => {
  mxPort = svc.postline.smtp!.mxPort!;
  acme = await svc.createOrg('pro');
  const domain = await addVerifiedDomain(acme.live, dns, 'acme-dmarc.test', { inbound_enabled: true });
  domainId = domain.id;
  rua = `dmarc+${domainId}@mx.postline.test`;
});

/** A report as its reporter mails it: from its own address, the report attached under its usual name. */
const mail = (from: string, file: string, contentType: string, to = rua) =>
  mxClient(mxPort).sendMail({
    envelope: { from: `dmarc@${from}`, to: [to] },
    from: `dmarc@${from}`,
    to,
    subject: `Report domain: acme-dmarc.test Submitter: ${from}`,
    text: 'This is an aggregate report from a mail receiver.',
    attachments: [{ filename: file, content: fixture(file), contentType }],
  });

/** A report that is the message itself: a single gzip part, no text beside it. */
const mailAsBody = (from: string, file: string) =>
  mxClient(mxPort).sendMail({
    envelope: { from: `dmarc@${from}`, to: [rua] },
    raw: [
      `From: dmarc@${from}`,
      `To: ${rua}`,
      `Subject: Report Domain: acme-dmarc.test Submitter: ${from}`,
      'MIME-Version: 1.0',
      `Content-Type: application/gzip; name="${file}"`,
      `Content-Disposition: attachment; filename="${file}"`,
      'Content-Transfer-Encoding: base64',
      '',
      ...(fixture(file)
        .toString('base64')
        .match(/.{1,76}/g) ?? []),
      '',
    ].join('\r\n'),
  });

const reports = async () => (await acme.live.get(`/v1/domains/${domainId}/dmarc-reports`)).body;

describe('DMARC aggregate reports through the MX', () => {
  it("the domain's DMARC record names its rua address on the MX once inbound is set up", async () => {
    const domain = (await acme.live.get(`/v1/domains/${domainId}`)).body;
    const dmarc = domain.dns_records.find((r: any) => r.purpose === 'dmarc');
    expect(dmarc.value).toBe(`v=DMARC1; p=none; rua=mailto:${rua}`);
  });

  it("Google's zip, Microsoft's and Yahoo's gzip appear per reporter and day, sources marked Postline's or not", async () => {
    for (const [from, file, type] of REPORTS.slice(0, 2))
      expect((await mail(from, file, type)).response).toBe('250 2.0.0 Ok: received');
    expect((await mailAsBody(REPORTS[2][0], REPORTS[2][1])).response).toBe('250 2.0.0 Ok: received');
    await expect.poll(async () => (await reports()).data.length, PATIENCE).toBe(3);
    const { data } = await reports();
    expect(data.map((d: any) => [d.day, d.reporter])).toEqual([
      ['2026-11-27', 'Yahoo'],
      ['2026-11-26', 'Enterprise Outlook'],
      ['2026-11-25', 'google.com'],
    ]);
    expect(data[2]).toMatchObject({
      object: 'dmarc_report_day',
      reporter_email: 'noreply-dmarc-support@google.com',
      reports: 1,
      messages: 124,
      dmarc_pass: 120,
      dkim_pass: 120,
      dkim_aligned: 120,
      spf_pass: 120,
      spf_aligned: 0,
      sources: [
        {
          ip: '192.0.2.10',
          messages: 120,
          dmarc_pass: 120,
          dkim_aligned: 120,
          spf_aligned: 0,
          postline: true,
        },
        { ip: '198.51.100.23', messages: 4, dmarc_pass: 0, dkim_aligned: 0, spf_aligned: 0, postline: false },
      ],
    });
    expect(data[1].sources.map((s: any) => [s.ip, s.messages, s.postline])).toEqual([
      ['192.0.2.10', 80, true],
      ['203.0.113.45', 12, false],
    ]);
    expect(data[0]).toMatchObject({ messages: 60, dmarc_pass: 45, dkim_pass: 60, spf_pass: 60 });
  });

  it('a report sent again is recorded once; one about another domain, or unreadable, is dropped after 250', async () => {
    const [from, file, type] = REPORTS[0];
    expect((await mail(from, file, type)).response).toBe('250 2.0.0 Ok: received');
    const other = fixture('google.xml')
      .toString()
      .replace('<domain>acme-dmarc.test</domain>', '<domain>other.test</domain>');
    const sent = await mxClient(mxPort).sendMail({
      envelope: { from: 'dmarc@google.com', to: [rua] },
      from: 'dmarc@google.com',
      to: rua,
      subject: 'Report',
      text: 'x',
      attachments: [
        {
          filename: 'other.xml',
          content: other.replace('4861092377154612893', '1'),
          contentType: 'text/xml',
        },
        {
          filename: 'broken.zip',
          content: Buffer.from('PK\x03\x04 not a zip'),
          contentType: 'application/zip',
        },
      ],
    });
    expect(sent.response).toBe('250 2.0.0 Ok: received');
    const log = await svc.postline.services.store.readStream(`dmarc-${domainId}`);
    expect(log.map((e) => e.type)).toEqual([
      'DmarcReportReceived',
      'DmarcReportReceived',
      'DmarcReportReceived',
    ]);
    expect(log[0].metadata).toMatchObject({ orgId: acme.orgId, mode: 'live', actor: 'mx' });
    expect((await reports()).data).toHaveLength(3);
  });

  it('an address naming no domain is refused at RCPT, one on an inbound domain is inbound mail; another organization cannot read the reports', async () => {
    const smtp = await rawSmtp(mxPort);
    await smtp.command('EHLO reporter.test');
    await smtp.command('MAIL FROM:<dmarc@google.com>');
    expect((await smtp.command('RCPT TO:<dmarc+dom_nosuchdomain@mx.postline.test>')).code).toBe(550);
    expect((await smtp.command(`RCPT TO:<dmarc+${domainId}@elsewhere.test>`)).code).toBe(550);
    // On a customer's inbound domain the same local part is the customer's own mail.
    expect((await smtp.command(`RCPT TO:<dmarc+${domainId}@acme-dmarc.test>`)).code).toBe(250);
    await smtp.close();
    const other = await svc.createOrg('pro');
    const read = await other.live.get(`/v1/domains/${domainId}/dmarc-reports`);
    expect(read.status).toBe(404);
    expect(read.body.error).toMatchObject({ type: 'not_found_error' });
  });

  it('the read models are made again from the events alone (projections rebuild dmarc_reports)', async () => {
    const before = await reports();
    const { services } = svc.postline;
    const { events } = await rebuildProjection(
      services.db,
      services.store,
      dmarcReportsProjection,
      services.log,
    );
    expect(events).toBeGreaterThan(0);
    expect(await reports()).toEqual(before);
  });

  it("a deleted domain's address is refused; purged, its reports go with it", async () => {
    expect((await acme.live.request('DELETE', `/v1/domains/${domainId}`)).status).toBe(200);
    const smtp = await rawSmtp(mxPort);
    await smtp.command('EHLO reporter.test');
    await smtp.command('MAIL FROM:<dmarc@google.com>');
    expect((await smtp.command(`RCPT TO:<${rua}>`)).code).toBe(550);
    smtp.close();
    const { services } = svc.postline;
    const rows = (table: string) =>
      services.db.query(`SELECT 1 FROM ${table} WHERE domain_id = $1`, [domainId]);
    expect((await rows('dmarc_reports')).rowCount).toBe(3);
    expect((await rows('dmarc_report_sources')).rowCount).toBe(6);
    // The purge is due 30 days after the deletion.
    const later = {
      ...services,
      clock: { ...services.clock, now: () => new Date(Date.now() + 31 * 86_400_000) },
    };
    const { position } = await purgeDomain(
      later,
      { orgId: acme.orgId, mode: 'live', actor: 'test' },
      { id: domainId, name: 'acme-dmarc.test' },
    );
    await services.readYourWrites.waitFor(['dmarc_reports'], position!);
    expect((await rows('dmarc_reports')).rowCount).toBe(0);
    expect((await rows('dmarc_report_sources')).rowCount).toBe(0);
  });
});
