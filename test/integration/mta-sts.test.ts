import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { dkimVerify } from 'mailauth';
import { simpleParser } from 'mailparser';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { createResolver, mailauthResolver } from '../../platform/dns.ts';
import { DeliveryProcess } from '../../processes/delivery/delivery.process.ts';
import { TlsReportProcess } from '../../processes/delivery/mta-sts/tls-report.process.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import { readEmail } from '../support/emails.ts';
import type { TestOrg } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';
import { useTempDir } from '../support/temp-dir.ts';

/**
 * Receiving domains on loopback, their MX hosts on addresses of their own sharing one port (OUTBOUND_SMTP_PORT):
 * - enforce.test: policy `enforce` naming mx1 (a certificate of the test CA); its preferred MX, mx2, is not named;
 * - badcert.test: policy `enforce` naming its MX, whose certificate is self-signed;
 * - testing.test: policy `testing` naming its MX, the same self-signed one.
 * Policies are served over HTTPS with a certificate of the test CA (OUTBOUND_TLS_CA_FILE); each domain publishes
 * `_smtp._tls` with a mailto rua at reports.test, whose MX is the rua mailbox.
 */
const ADDRESS = {
  mx1: '127.0.33.1',
  mx2: '127.0.33.2',
  bad: '127.0.33.3',
  rua: '127.0.33.4',
  https: '127.0.33.5',
  plain: '127.0.33.6',
};
const DOMAINS = ['enforce.test', 'badcert.test', 'testing.test', 'plain.test', 'stray.test'];
const POLICY: Record<string, string> = {
  'enforce.test': 'version: STSv1\r\nmode: enforce\r\nmx: mx1.enforce.test\r\nmax_age: 86400\r\n',
  'badcert.test': 'version: STSv1\r\nmode: enforce\r\nmx: *.badcert.test\r\nmax_age: 86400\r\n',
  'testing.test': 'version: STSv1\r\nmode: testing\r\nmx: mx.testing.test\r\nmax_age: 86400\r\n',
  'plain.test': 'version: STSv1\r\nmode: enforce\r\nmx: mx.plain.test\r\nmax_age: 86400\r\n',
  'stray.test': 'version: STSv1\r\nmode: enforce\r\nmx: mx.elsewhere.test\r\nmax_age: 86400\r\n',
};

const dir = useTempDir('mta-sts');
const caFile = join(dir, 'ca.pem');
/** The operator's key for signing the reports (TLSRPT_DKIM_*), its record published for postline.test. */
const dkimKeyFile = join(dir, 'tlsrpt-dkim.pem');
const dkimKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
const clock = new ManualClock('2026-07-01T09:00:00Z');
const sinks: Record<'mx1' | 'mx2' | 'bad' | 'plain' | 'rua', SmtpSink> = {} as never;
let policyServer: Server;
const policyFetches: string[] = [];
/** Reports posted to the https rua of testing.test (on the policy server): content type and body. */
const posted: { type?: string; body: Buffer }[] = [];
/** The policy server answers 503 (a web server that is down). */
let policyDown = false;
let acme: TestOrg;
let delivery: DeliveryProcess;
let reports: TlsReportProcess;

const policyPort = () => (policyServer.address() as AddressInfo).port;

const leaf = (names: string[], ca?: { key: string; cert: string }) =>
  generate([{ name: 'commonName', value: names[0] }], {
    keySize: 2048,
    algorithm: 'sha256',
    ...(ca && { ca }),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: names.map((value) => ({ type: 2 as const, value })) },
    ],
  });

beforeAll(async () => {
  const ca = await generate([{ name: 'commonName', value: 'Postline test CA' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  writeFileSync(caFile, ca.cert);
  writeFileSync(dkimKeyFile, dkimKey.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  const signedBy = { key: ca.private, cert: ca.cert };
  const mx1 = await leaf(['mx1.enforce.test'], signedBy);
  const other = await leaf(['mx2.enforce.test'], signedBy);
  const selfSigned = await leaf(['mx.badcert.test', 'mx.testing.test']);
  const https = await leaf([...DOMAINS.map((d) => `mta-sts.${d}`), 'tlsrpt.reports.test'], signedBy);
  const cert = (pems: { private: string; cert: string }) => ({ key: pems.private, cert: pems.cert });
  sinks.mx1 = await startSmtpSink({ starttls: true, certificate: cert(mx1), host: ADDRESS.mx1 });
  const port = sinks.mx1.port;
  sinks.mx2 = await startSmtpSink({ starttls: true, certificate: cert(other), host: ADDRESS.mx2, port });
  sinks.bad = await startSmtpSink({ starttls: true, certificate: cert(selfSigned), host: ADDRESS.bad, port });
  sinks.plain = await startSmtpSink({ host: ADDRESS.plain, port });
  sinks.rua = await startSmtpSink({ starttls: true, host: ADDRESS.rua, port });
  policyServer = createServer(cert(https), (req, res) => {
    if (req.method === 'POST' && req.url === '/tlsrpt') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        posted.push({ type: req.headers['content-type'], body: Buffer.concat(chunks) });
        res.writeHead(201).end();
      });
      return;
    }
    const domain = (req.headers.host ?? '').replace(/^mta-sts\./, '').replace(/:\d+$/, '');
    policyFetches.push(`${domain}${req.url}`);
    if (policyDown) return res.writeHead(503).end();
    if (req.url !== '/.well-known/mta-sts.txt' || !POLICY[domain]) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/plain' }).end(POLICY[domain]);
  });
  await new Promise<void>((resolve) => policyServer.listen(0, ADDRESS.https, resolve));
});
const { svc, dns } = useDnsService(() => ({
  clock,
  env: {
    OUTBOUND_SMTP_PORT: String(sinks.mx1.port),
    OUTBOUND_TLS_CA_FILE: caFile,
    MTA_STS_PORT: String(policyPort()),
    TLSRPT_FROM: 'tlsrpt@postline.test',
    TLSRPT_DKIM_KEY_FILE: dkimKeyFile,
    TLSRPT_DKIM_SELECTOR: 'tlsrpt',
    SMTP_HOSTNAME: 'mail.postline.test',
    // The https rua of testing.test is on loopback.
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  },
}));
beforeAll(async () => {
  const host = (name: string, address: string) => dns.set(name, 'A', [address]);
  dns.set('enforce.test', 'MX', ['10 mx2.enforce.test', '20 mx1.enforce.test']);
  host('mx1.enforce.test', ADDRESS.mx1);
  host('mx2.enforce.test', ADDRESS.mx2);
  dns.set('badcert.test', 'MX', ['10 mx.badcert.test']);
  host('mx.badcert.test', ADDRESS.bad);
  dns.set('testing.test', 'MX', ['10 mx.testing.test']);
  host('mx.testing.test', ADDRESS.bad);
  dns.set('stray.test', 'MX', ['10 mx.stray.test']);
  host('mx.stray.test', ADDRESS.mx2);
  dns.set('plain.test', 'MX', ['10 mx.plain.test']);
  host('mx.plain.test', ADDRESS.plain);
  dns.set('reports.test', 'MX', ['10 mx.reports.test']);
  host('mx.reports.test', ADDRESS.rua);
  host('tlsrpt.reports.test', ADDRESS.https);
  const spki = dkimKey.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  dns.set('tlsrpt._domainkey.postline.test', 'TXT', [`v=DKIM1; k=rsa; p=${spki}`]);
  for (const d of DOMAINS) {
    dns.set(`_mta-sts.${d}`, 'TXT', ['v=STSv1; id=20260701']);
    // plain.test and stray.test ask for no reports.
    const https = d === 'testing.test' ? `,https://tlsrpt.reports.test:${policyPort()}/tlsrpt` : '';
    if (d !== 'plain.test' && d !== 'stray.test')
      dns.set(`_smtp._tls.${d}`, 'TXT', [`v=TLSRPTv1; rua=mailto:tls-reports@reports.test${https}`]);
    host(`mta-sts.${d}`, ADDRESS.https);
  }
  acme = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, dns, 'acme-send.test');
  delivery = new DeliveryProcess(svc.postline.services);
  reports = new TlsReportProcess(svc.postline.services);
});
afterAll(async () => {
  await delivery?.stop();
  await reports?.stop();
  await new Promise((resolve) => policyServer?.close(resolve));
  for (const sink of Object.values(sinks)) await sink?.close();
});

const send = async (to: string, process = delivery) => {
  const r = await acme.live.post('/v1/emails', {
    from: 'news@acme-send.test',
    to: [to],
    subject: 'Hi',
    text: 'Hello',
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  await process.runOnce();
  return readEmail(svc, acme.live, r.body.id as string);
};

describe('MTA-STS (RFC 8461) for outbound delivery', () => {
  it('delivers only to the MX the enforce policy names, over TLS verified for its name', async () => {
    const email = await send('ann@enforce.test');
    expect(email.status).toBe('delivered');
    expect(sinks.mx1.messages.map((m) => [m.rcptTo, m.secure])).toEqual([[['ann@enforce.test'], true]]);
    // The preferred MX is not in the policy: never even connected to.
    expect(sinks.mx2.connections.total).toBe(0);
    expect(policyFetches).toEqual(['enforce.test/.well-known/mta-sts.txt']);
    // The policy is kept in PostgreSQL for every process, until its max_age.
    const { rows } = await svc.postline.services.db.query(
      'SELECT policy_id, policy_text, expires_at FROM mta_sts_policies WHERE domain = $1',
      ['enforce.test'],
    );
    expect(rows).toEqual([
      {
        policy_id: '20260701',
        policy_text: POLICY['enforce.test'],
        expires_at: new Date('2026-07-02T09:00:00Z'),
      },
    ]);
  });

  it('keeps a stored policy in force for every process when a new one cannot be fetched', async () => {
    // A process of its own (nothing cached in memory); the record announces a new policy the server fails to give.
    const other = new DeliveryProcess(svc.postline.services);
    dns.set('_mta-sts.enforce.test', 'TXT', ['v=STSv1; id=20260701b']);
    policyDown = true;
    try {
      const email = await send('dan@enforce.test', other);
      expect(email.status).toBe('delivered');
      expect(policyFetches.at(-1)).toBe('enforce.test/.well-known/mta-sts.txt');
      expect(sinks.mx1.messages.map((m) => m.rcptTo)).toEqual([['ann@enforce.test'], ['dan@enforce.test']]);
      expect(sinks.mx2.connections.total).toBe(0);
    } finally {
      policyDown = false;
      await other.stop();
    }
  });

  it('defers mail for an enforce policy whose MX has no valid certificate, and never sends it in clear', async () => {
    const email = await send('bob@badcert.test');
    expect(email.recipients[0]).toMatchObject({ status: 'delayed', attempts: 1, bounce_type: null });
    expect(email.recipients[0].smtp_response).toMatch(
      /^4\.7\.5 MTA-STS: no valid TLS with mx\.badcert\.test \(certificate-not-trusted\)/,
    );
    expect(sinks.bad.messages).toEqual([]);
    expect(sinks.bad.rcptLog).toEqual([]);
  });

  it('defers mail for an enforce policy whose MX offers no STARTTLS', async () => {
    const email = await send('eve@plain.test');
    expect(email.recipients[0]).toMatchObject({ status: 'delayed', attempts: 1 });
    expect(email.recipients[0].smtp_response).toMatch(
      /^4\.7\.5 MTA-STS: no valid TLS with mx\.plain\.test \(starttls-not-supported\)/,
    );
    expect(sinks.plain.rcptLog).toEqual([]);
  });

  it('defers mail for an enforce policy that names none of the MX hosts, counting the validation failure', async () => {
    const email = await send('fay@stray.test');
    expect(email.recipients[0]).toMatchObject({ status: 'delayed', attempts: 1 });
    expect(email.recipients[0].smtp_response).toBe(
      '4.7.5 MTA-STS: the policy of stray.test does not name its MX host mx.stray.test (TLS not verified)',
    );
    expect(sinks.mx2.connections.total).toBe(0);
  });

  it('delivers under a testing policy as without one, counting the failure', async () => {
    const email = await send('cat@testing.test');
    expect(email.status).toBe('delivered');
    expect(sinks.bad.messages.map((m) => m.rcptTo)).toEqual([['cat@testing.test']]);
  });
});

describe('TLS reports (RFC 8460)', () => {
  it('sends each domain the day’s report at its rua, a gzip JSON attachment as the RFC shapes it', async () => {
    await delivery.stop(); // its counts written
    clock.advance(24 * 3600_000);
    expect(await reports.runOnce()).toBe(3);
    const mails = await sinks.rua.waitForMessages(3);
    // Signed with the operator's key for the From domain, and the signature verifies against its record.
    const resolver = mailauthResolver(createResolver([dns.serverAddress]));
    for (const m of mails) {
      const { results } = await dkimVerify(m.raw, { resolver });
      expect(results.map((r: any) => [r.signingDomain, r.selector, r.status.result])).toEqual([
        ['postline.test', 'tlsrpt', 'pass'],
      ]);
    }
    const parsed = await Promise.all(mails.map((m) => simpleParser(m.raw)));
    const byDomain = new Map(parsed.map((m) => [m.headers.get('tls-report-domain') as string, m]));
    expect([...byDomain.keys()].sort()).toEqual(['badcert.test', 'enforce.test', 'testing.test']);
    const report = (domain: string) => {
      const mail = byDomain.get(domain) as (typeof parsed)[number];
      const type = mail.headers.get('content-type') as { value: string; params: Record<string, string> };
      expect(type).toMatchObject({ value: 'multipart/report', params: { 'report-type': 'tlsrpt' } });
      expect(mail.headers.get('tls-report-submitter')).toBe('mail.postline.test');
      expect(mail.subject).toBe(
        `Report Domain: ${domain} Submitter: mail.postline.test Report-ID: <2026-07-01.${domain}@mail.postline.test>`,
      );
      const [part, ...more] = mail.attachments;
      expect(more).toEqual([]);
      expect(part.contentType).toBe('application/tlsrpt+gzip');
      expect(part.filename).toBe(
        `mail.postline.test!${domain}!1782864000!1782950399!2026-07-01.${domain}-mail.postline.test.json.gz`,
      );
      return JSON.parse(gunzipSync(part.content).toString());
    };
    const policy = (domain: string, mx: string[]) => ({
      'policy-type': 'sts',
      'policy-string': POLICY[domain].trim().split('\r\n'),
      'mx-host': mx,
      'policy-domain': domain,
    });
    expect(report('enforce.test')).toEqual({
      'organization-name': 'mail.postline.test',
      'date-range': { 'start-datetime': '2026-07-01T00:00:00Z', 'end-datetime': '2026-07-01T23:59:59Z' },
      'contact-info': 'tlsrpt@postline.test',
      'report-id': '2026-07-01.enforce.test@mail.postline.test',
      policies: [
        {
          policy: policy('enforce.test', ['mx1.enforce.test']),
          // mx2 was passed over, but the mail delivered: no failure of it to report.
          summary: { 'total-successful-session-count': 2, 'total-failure-session-count': 1 },
          'failure-details': [{ 'result-type': 'sts-policy-fetch-error', 'failed-session-count': 1 }],
        },
      ],
    });
    const failedOnce = (domain: string, mx: string) => ({
      summary: { 'total-successful-session-count': 0, 'total-failure-session-count': 1 },
      'failure-details': [
        { 'result-type': 'certificate-not-trusted', 'receiving-mx-hostname': mx, 'failed-session-count': 1 },
      ],
      policy: policy(domain, [mx.replace(/^mx\.badcert/, '*.badcert')]),
    });
    expect(report('badcert.test').policies).toEqual([failedOnce('badcert.test', 'mx.badcert.test')]);
    expect(report('testing.test').policies).toEqual([failedOnce('testing.test', 'mx.testing.test')]);
    // testing.test's https rua got the same report, posted.
    expect(posted.map((p) => p.type)).toEqual(['application/tlsrpt+gzip']);
    expect(JSON.parse(gunzipSync(posted[0].body).toString())).toEqual(report('testing.test'));
    // plain.test publishes no rua: its report is done, sent nowhere.
    const { rows } = await svc.postline.services.db.query(
      'SELECT domain, sent_at IS NOT NULL AS done, last_error FROM tls_reports ORDER BY domain',
    );
    expect(rows).toEqual(
      ['badcert.test', 'enforce.test', 'plain.test', 'stray.test', 'testing.test'].map((domain) => ({
        domain,
        done: true,
        last_error: null,
      })),
    );
    const counted = await svc.postline.services.db.query(
      `SELECT result_type, receiving_mx, sessions::int FROM tls_report_counts WHERE domain = 'stray.test'`,
    );
    expect(counted.rows).toEqual([
      { result_type: 'validation-failure', receiving_mx: 'mx.stray.test', sessions: 1 },
    ]);
    // Sent once: a second run finds nothing to send.
    expect(await reports.runOnce()).toBe(0);
  });
});
