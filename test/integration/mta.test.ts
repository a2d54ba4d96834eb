import { generateKeyPairSync } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundMta } from '../../processes/delivery/mta/outbound.ts';
import { verifyDkim } from '../support/dkim.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { outboundMessage } from '../support/outbound-message.ts';
import { type ScriptedSession, startScriptedSmtp } from '../support/scripted-smtp.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

type Dns = Awaited<ReturnType<typeof startDnsServer>>;

const log = pino({ level: 'silent' });
let dns: Dns;
const sinks: SmtpSink[] = [];
const mtas: OutboundMta[] = [];

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const dkimPrivateKey = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const dkimPublicTxt = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;

/** A recipient domain whose MX (mx.<domain>) resolves to 127.0.0.1. */
function publishMx(domain: string, mxHosts: { host: string; priority: number; address?: string }[] = []) {
  const hosts = mxHosts.length > 0 ? mxHosts : [{ host: `mx.${domain}`, priority: 10 }];
  dns.set(
    domain,
    'MX',
    hosts.map((h) => ({ exchange: h.host, priority: h.priority })),
  );
  for (const h of hosts) dns.set(h.host, 'A', [h.address ?? '127.0.0.1']);
}

async function sink(options: Parameters<typeof startSmtpSink>[0] = {}) {
  const s = await startSmtpSink(options);
  sinks.push(s);
  return s;
}

function mta(port: number, over: Partial<ConstructorParameters<typeof OutboundMta>[0]> = {}) {
  const m = new OutboundMta({
    dnsServers: [dns.serverAddress],
    port,
    log,
    timeoutMs: 5_000,
    tls: { rejectUnauthorized: false },
    heloName: 'out.postline.test',
    ...over,
  });
  mtas.push(m);
  return m;
}

const message = outboundMessage;

/** A TCP port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  dns = await startDnsServer();
  dns.set('pl1._domainkey.sender.test', 'TXT', [dkimPublicTxt]);
});

afterAll(async () => {
  await Promise.all(mtas.map((m) => m.close()));
  await Promise.all(sinks.map((s) => s.close()));
  await dns?.close();
});

describe('outbound MTA over MX', () => {
  it('delivers a composed, DKIM-signed message to the MX of the recipient domain', async () => {
    const s = await sink();
    publishMx('one.test');
    publishMx('two.test');
    const logo = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const m = message({
      to: ['Ann <ann@one.test>'],
      cc: ['carl@one.test'],
      bcc: ['hidden@two.test'],
      replyTo: ['support@sender.test'],
      subject: 'Your receipt',
      text: 'Thanks for your order.',
      html: '<p>Thanks for your order.</p><img src="cid:logo@sender.test">',
      headers: { 'X-Campaign': 'spring' },
      attachments: [
        { filename: 'receipt.txt', contentType: 'text/plain', content: Buffer.from('total: 42 EUR') },
        { filename: 'logo.png', contentType: 'image/png', contentId: 'logo@sender.test', content: logo },
      ],
      dkim: { domainName: 'sender.test', keySelector: 'pl1', privateKey: dkimPrivateKey },
    });

    const outcomes = await mta(s.port).send(m, ['ann@one.test', 'carl@one.test', 'hidden@two.test']);

    expect(outcomes).toEqual([
      expect.objectContaining({
        recipient: 'ann@one.test',
        result: 'delivered',
        smtpCode: 250,
        mx: 'mx.one.test',
      }),
      expect.objectContaining({
        recipient: 'carl@one.test',
        result: 'delivered',
        smtpCode: 250,
        mx: 'mx.one.test',
      }),
      expect.objectContaining({
        recipient: 'hidden@two.test',
        result: 'delivered',
        smtpCode: 250,
        mx: 'mx.two.test',
      }),
    ]);
    // One transaction per recipient domain.
    expect(s.messages).toHaveLength(2);
    const one = s.messages.find((x) => x.rcptTo.includes('ann@one.test'));
    const two = s.messages.find((x) => x.rcptTo.includes('hidden@two.test'));
    expect(one?.rcptTo).toEqual(['ann@one.test', 'carl@one.test']);
    expect(two?.rcptTo).toEqual(['hidden@two.test']);
    expect(one?.mailFrom).toBe(m.envelopeFrom);
    expect(one?.heloName).toBe('out.postline.test');

    const raw = one?.raw.toString('utf8') ?? '';
    const [headers, body] = [raw.split('\r\n\r\n')[0], raw];
    expect(headers).toMatch(/^From: Acme <hello@sender\.test>$/m);
    expect(headers).toMatch(/^To: Ann <ann@one\.test>$/m);
    expect(headers).toMatch(/^Cc: carl@one\.test$/m);
    expect(headers).toMatch(/^Reply-To: support@sender\.test$/m);
    expect(headers).toMatch(/^Subject: Your receipt$/m);
    expect(headers).toMatch(new RegExp(`^Message-ID: ${m.messageId}$`, 'm'));
    expect(headers).toMatch(/^Date: Sun, 01 Mar 2026 10:00:00 \+0000$/m);
    expect(headers).toMatch(/^X-Campaign: spring$/m);
    expect(raw).not.toMatch(/^Bcc:/im);
    expect(raw).not.toContain('hidden@two.test');
    expect(body).toContain('Thanks for your order.');
    expect(body).toMatch(/Content-Type: text\/html/);
    expect(body).toMatch(/Content-Type: multipart\/related/);
    expect(body).toMatch(/filename=receipt\.txt/);
    expect(body).toContain(Buffer.from('total: 42 EUR').toString('base64'));
    expect(body).toMatch(/Content-ID: <logo@sender\.test>/);
    expect(body).toContain(logo.toString('base64'));

    // The signature verifies against the public key published in (test) DNS.
    const verified = await verifyDkim(dns, one?.raw ?? Buffer.alloc(0));
    expect(verified.results).toHaveLength(1);
    expect(verified.results[0].status.result).toBe('pass');
    expect(verified.results[0].signingDomain).toBe('sender.test');
  });

  it('gives each recipient of one transaction its own outcome, and a 4xx recipient is delivered later', async () => {
    const s = await sink();
    publishMx('mixed.test');
    s.scriptRecipient('later@mixed.test', { code: 451, message: '4.2.0 mailbox busy, try later' });
    s.scriptRecipient('gone@mixed.test', { code: 550, message: '5.1.1 no such user' }, 'always');
    const out = mta(s.port);
    const m = message({ to: ['ok@mixed.test', 'later@mixed.test', 'gone@mixed.test'] });

    const first = await out.send(m, m.to);
    expect(first).toEqual([
      expect.objectContaining({ recipient: 'ok@mixed.test', result: 'delivered', smtpCode: 250 }),
      expect.objectContaining({
        recipient: 'later@mixed.test',
        result: 'deferred',
        smtpCode: 451,
        smtpResponse: '451 4.2.0 mailbox busy, try later',
      }),
      expect.objectContaining({
        recipient: 'gone@mixed.test',
        result: 'bounced',
        smtpCode: 550,
        smtpResponse: '550 5.1.1 no such user',
      }),
    ]);
    expect(s.messages).toHaveLength(1);
    expect(s.messages[0].rcptTo).toEqual(['ok@mixed.test']);

    const retry = await out.send(m, ['later@mixed.test']);
    expect(retry).toEqual([
      expect.objectContaining({ recipient: 'later@mixed.test', result: 'delivered', smtpCode: 250 }),
    ]);
    expect(s.messages[1].rcptTo).toEqual(['later@mixed.test']);
  });

  it('applies a refused DATA to every accepted recipient: 5xx bounces, 4xx defers', async () => {
    const s = await sink();
    publishMx('data.test');
    s.scriptData(
      { code: 554, message: '5.7.1 message rejected as spam' },
      { code: 452, message: '4.3.1 insufficient system storage' },
    );
    s.scriptRecipient('nobody@data.test', { code: 550, message: '5.1.1 no such user' });
    const out = mta(s.port);
    const m = message({ to: ['a@data.test', 'b@data.test', 'nobody@data.test'] });

    expect(await out.send(m, m.to)).toEqual([
      expect.objectContaining({ recipient: 'a@data.test', result: 'bounced', smtpCode: 554 }),
      expect.objectContaining({ recipient: 'b@data.test', result: 'bounced', smtpCode: 554 }),
      expect.objectContaining({ recipient: 'nobody@data.test', result: 'bounced', smtpCode: 550 }),
    ]);
    const [outcome] = await out.send(m, ['a@data.test']);
    expect(outcome).toMatchObject({ result: 'deferred', smtpCode: 452 });
    expect(outcome.smtpResponse).toContain('insufficient system storage');
    // The connection survived both refusals (RSET) and delivers the next message.
    expect(await out.send(m, ['a@data.test'])).toEqual([expect.objectContaining({ result: 'delivered' })]);
    expect(s.connections.total).toBe(1);
  });

  it('falls back to the A record when the domain has no MX', async () => {
    const s = await sink();
    dns.set('a-only.test', 'A', ['127.0.0.1']);
    const [outcome] = await mta(s.port).send(message({ to: ['x@a-only.test'] }), ['x@a-only.test']);
    expect(outcome).toMatchObject({ result: 'delivered', mx: 'a-only.test' });
    expect(s.messages[0].rcptTo).toEqual(['x@a-only.test']);
  });

  it('tries the next MX host when the preferred one refuses connections', async () => {
    const s = await sink();
    publishMx('backup.test', [
      { host: 'mx1.backup.test', priority: 10, address: '127.0.0.2' },
      { host: 'mx2.backup.test', priority: 20 },
    ]);
    const [outcome] = await mta(s.port).send(message({ to: ['x@backup.test'] }), ['x@backup.test']);
    expect(outcome).toMatchObject({ result: 'delivered', mx: 'mx2.backup.test' });
  });

  it('bounces every recipient of a null MX domain without connecting', async () => {
    const s = await sink();
    dns.set('nullmx.test', 'MX', [{ exchange: '.', priority: 0 }]);
    dns.set('nullmx.test', 'A', ['127.0.0.1']);
    const outcomes = await mta(s.port).send(message({ to: ['a@nullmx.test', 'b@nullmx.test'] }), [
      'a@nullmx.test',
      'b@nullmx.test',
    ]);
    for (const o of outcomes) {
      expect(o).toMatchObject({ result: 'bounced', smtpCode: 556 });
      expect(o.smtpResponse).toContain('does not accept mail');
    }
    expect(s.connections.total).toBe(0);
  });

  it('bounces a domain that does not exist', async () => {
    const s = await sink();
    const [outcome] = await mta(s.port).send(message({ to: ['x@missing.test'] }), ['x@missing.test']);
    expect(outcome).toMatchObject({ result: 'bounced', smtpCode: 550 });
    expect(s.connections.total).toBe(0);
  });

  it('defers when DNS does not answer, and when the MX refuses connections', async () => {
    // A DNS server that never answers: a UDP port held, so that no other test's DNS server can take it meanwhile.
    const silent = createSocket('udp4');
    await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    const noDns = mta(25, { dnsServers: [`127.0.0.1:${silent.address().port}`], timeoutMs: 1_000 });
    const [dnsOutcome] = await noDns
      .send(message({ to: ['x@one.test'] }), ['x@one.test'])
      .finally(() => silent.close());
    expect(dnsOutcome.result).toBe('deferred');
    expect(dnsOutcome.smtpCode).toBeUndefined();
    expect(dnsOutcome.smtpResponse).toMatch(/MX lookup for one\.test failed/);

    publishMx('refused.test');
    const [refused] = await mta(await closedPort()).send(message({ to: ['x@refused.test'] }), [
      'x@refused.test',
    ]);
    expect(refused.result).toBe('deferred');
    expect(refused.smtpCode).toBeUndefined();
    expect(refused.smtpResponse).toMatch(/ECONNREFUSED|ECONNECTION|refused/i);
  });

  it('uses STARTTLS when the receiver offers it', async () => {
    const s = await sink({ starttls: true });
    publishMx('tls.test');
    const [outcome] = await mta(s.port).send(message({ to: ['x@tls.test'] }), ['x@tls.test']);
    expect(outcome).toMatchObject({ result: 'delivered', tls: true });
    expect(s.messages[0].secure).toBe(true);
  });

  it('falls back to plain text when the STARTTLS handshake fails', async () => {
    const s = await sink({ starttls: true });
    publishMx('badcert.test');
    // Verifying the sink's self-signed certificate makes the handshake fail.
    const out = mta(s.port, { tls: { rejectUnauthorized: true } });
    const [outcome] = await out.send(message({ to: ['x@badcert.test'] }), ['x@badcert.test']);
    expect(outcome).toMatchObject({ result: 'delivered', tls: false });
    expect(s.messages[0].secure).toBe(false);
  });

  it('sends in clear to a receiver without STARTTLS', async () => {
    const s = await sink();
    publishMx('plain.test');
    const [outcome] = await mta(s.port).send(message({ to: ['x@plain.test'] }), ['x@plain.test']);
    expect(outcome).toMatchObject({ result: 'delivered', tls: false });
    expect(s.messages[0].secure).toBe(false);
  });

  it('keeps a route to hosts for its TTL, but looks a bounce or a DNS failure up again', async () => {
    const s = await sink();
    const out = mta(s.port);
    // Not there yet: bounced, and not remembered.
    const [missing] = await out.send(message({ to: ['x@later.test'] }), ['x@later.test']);
    expect(missing).toMatchObject({ result: 'bounced', smtpCode: 550 });
    publishMx('later.test');
    const [found] = await out.send(message({ to: ['x@later.test'] }), ['x@later.test']);
    expect(found).toMatchObject({ result: 'delivered', mx: 'mx.later.test' });
    // The route found is used until its TTL (60 s in the test DNS) runs out, as a caching resolver would.
    dns.set('later.test', 'MX', [{ exchange: '.', priority: 0 }]);
    const [cached] = await out.send(message({ to: ['y@later.test'] }), ['y@later.test']);
    expect(cached).toMatchObject({ result: 'delivered', mx: 'mx.later.test' });
    // Another MTA (a fresh cache) sees the null MX.
    const [fresh] = await mta(s.port).send(message({ to: ['y@later.test'] }), ['y@later.test']);
    expect(fresh).toMatchObject({ result: 'bounced', smtpCode: 556 });
  });

  it('reuses connections and never opens more than the limit to one destination', async () => {
    const s = await sink({ dataDelayMs: 30 });
    publishMx('busy.test');
    const out = mta(s.port, { maxConnectionsPerDestination: 2 });
    const sends = Array.from({ length: 10 }, (_, i) =>
      out.send(message({ to: [`r${i}@busy.test`] }), [`r${i}@busy.test`]),
    );
    const results = (await Promise.all(sends)).flat();
    expect(results.every((r) => r.result === 'delivered')).toBe(true);
    expect(s.messages).toHaveLength(10);
    expect(s.connections.maxConcurrent).toBeLessThanOrEqual(2);
    expect(s.connections.total).toBe(2);
  });
});

describe('outbound MTA: the time limit of a send', () => {
  it('cuts a transaction still running at the limit: its connection closed, its recipients deferred', async () => {
    const s = await sink({ dataDelayMs: 10_000 });
    publishMx('slow.test');
    const out = mta(s.port, { timeoutMs: 20_000 });
    const [outcome] = await out.send(message({ to: ['x@slow.test'] }), ['x@slow.test'], { withinMs: 1500 });
    expect(outcome).toMatchObject({ result: 'deferred', mx: 'mx.slow.test' });
    expect(outcome.smtpCode).toBeUndefined();
    expect(outcome.smtpResponse).toMatch(/lost during the transaction: .*time limit/);
    // The connection is gone from the server's side too.
    while (s.connections.current > 0) await new Promise((r) => setTimeout(r, 10));
  });

  it('starts no transaction after the limit: a connection the pool hands out too late goes back unused', async () => {
    const s = await sink({ dataDelayMs: 1000 });
    publishMx('queued.test');
    const out = mta(s.port, { maxConnectionsPerDestination: 1 });
    const first = out.send(message({ to: ['a@queued.test'] }), ['a@queued.test']);
    while (s.holding === 0) await new Promise((r) => setTimeout(r, 5));
    // The one connection is busy for a second; this send may only start within 200 ms.
    const [late] = await out.send(message({ to: ['b@queued.test'] }), ['b@queued.test'], { withinMs: 200 });
    // No server was asked: not counted as an attempt.
    expect(late).toEqual({
      recipient: 'b@queued.test',
      result: 'deferred',
      smtpResponse:
        "local: no connection to mx.queued.test came free within the attempt's time limit; not counted as an attempt",
      attempted: false,
    });
    expect((await first)[0].result).toBe('delivered');
    expect(s.rcptLog.map((r) => r.recipient)).toEqual(['a@queued.test']);
    // The connection went back to the pool, whole: the next send uses it.
    expect((await out.send(message({ to: ['c@queued.test'] }), ['c@queued.test']))[0].result).toBe(
      'delivered',
    );
    expect(s.connections.total).toBe(1);
  });
});

/**
 * A receiver speaking SMTP by hand that drops its first connection during that connection's second transaction:
 * at its `MAIL FROM` (before DATA, nothing of the message handed over) or right after its body arrived (stored,
 * the 250 never sent). Its `messages` are those it kept, `connections` counts connections.
 */
const dropsSecondTransaction = (at: 'mail' | 'body') => {
  const dropHere = (s: ScriptedSession) => (s.connection === 1 && s.transaction === 2 ? 'drop' : undefined);
  return startScriptedSmtp({
    name: 'drops.test',
    command: (line, s) => (at === 'mail' && /^MAIL FROM/i.test(line) ? dropHere(s) : undefined),
    body: (s) => (at === 'body' ? dropHere(s) : undefined),
  });
};

describe('outbound MTA: connections that go wrong', () => {
  it('sends again on a fresh connection when a reused one drops before the server accepted DATA', async () => {
    const receiver = await dropsSecondTransaction('mail');
    try {
      publishMx('stale.test');
      const out = mta(receiver.port);
      const [a] = await out.send(message({ to: ['a@stale.test'] }), ['a@stale.test']);
      const [b] = await out.send(message({ to: ['b@stale.test'] }), ['b@stale.test']);
      expect([a.result, b.result]).toEqual(['delivered', 'delivered']);
      expect(receiver.messages.map((m) => m.rcptTo)).toEqual([['a@stale.test'], ['b@stale.test']]);
      expect(receiver.connections).toBe(2);
    } finally {
      await receiver.close();
    }
  });

  it('never sends a message twice when a reused connection drops after its body went out', async () => {
    const receiver = await dropsSecondTransaction('body');
    try {
      publishMx('lost-reply.test');
      const out = mta(receiver.port);
      const [a] = await out.send(message({ to: ['a@lost-reply.test'] }), ['a@lost-reply.test']);
      const [b] = await out.send(message({ to: ['b@lost-reply.test'] }), ['b@lost-reply.test']);
      expect(a.result).toBe('delivered');
      // The server may have kept it (it did): the outcome is unknown, deferred as on a fresh connection.
      expect(b).toMatchObject({ result: 'deferred', mx: 'mx.lost-reply.test' });
      expect(b.smtpCode).toBeUndefined();
      expect(b.smtpResponse).toMatch(/lost during the transaction/);
      expect(receiver.messages.map((m) => m.rcptTo)).toEqual([['a@lost-reply.test'], ['b@lost-reply.test']]);
      expect(receiver.connections).toBe(1);
    } finally {
      await receiver.close();
    }
  });

  it('opens a fresh connection when the receiver dropped the idle one', async () => {
    const s = await sink();
    publishMx('dropped.test');
    const out = mta(s.port);
    expect((await out.send(message({ to: ['a@dropped.test'] }), ['a@dropped.test']))[0].result).toBe(
      'delivered',
    );
    await s.dropConnections();
    expect((await out.send(message({ to: ['b@dropped.test'] }), ['b@dropped.test']))[0].result).toBe(
      'delivered',
    );
    expect(s.connections.total).toBe(2);
    expect(s.messages.map((m) => m.rcptTo[0])).toEqual(['a@dropped.test', 'b@dropped.test']);
  });

  it('defers when the receiver accepts the connection but never greets', async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      publishMx('silent.test');
      const out = mta((silent.address() as { port: number }).port, { timeoutMs: 300 });
      const [outcome] = await out.send(message({ to: ['x@silent.test'] }), ['x@silent.test']);
      expect(outcome.result).toBe('deferred');
      expect(outcome.smtpCode).toBeUndefined();
      expect(outcome.smtpResponse).toMatch(/ETIMEDOUT|timeout/i);
    } finally {
      silent.close();
    }
  });

  it('keeps NUL bytes and runaway length out of the replies it reports', async () => {
    // smtp-server blanks control characters in its replies, so this receiver speaks SMTP by hand.
    const rude = await startScriptedSmtp({
      name: 'rude.test',
      command: (line) => (/^RCPT TO:<a@/i.test(line) ? '451 4.3.0 busy\0 try later' : undefined),
      body: () => `554 5.6.0 refused\0 ${'x'.repeat(3000)}`,
    });
    try {
      publishMx('rude.test');
      const out = mta(rude.port);
      const to = ['a@rude.test', 'b@rude.test'];
      const [a, b] = await out.send(message({ to }), to);
      expect(a).toMatchObject({
        result: 'deferred',
        smtpCode: 451,
        smtpResponse: '451 4.3.0 busy try later',
      });
      expect(b).toMatchObject({ result: 'bounced', smtpCode: 554 });
      expect(b.smtpResponse).toMatch(/^554 5\.6\.0 refused x+$/);
      expect(b.smtpResponse.length).toBeLessThanOrEqual(1000);
    } finally {
      await rude.close();
    }
  });

  it('resolves internationalized domains in punycode and reports them as given', async () => {
    const s = await sink();
    publishMx('xn--bcher-kva.test');
    const [outcome] = await mta(s.port).send(message({ to: ['kim@bücher.test'] }), ['kim@bücher.test']);
    expect(outcome).toMatchObject({
      recipient: 'kim@bücher.test',
      result: 'delivered',
      mx: 'mx.xn--bcher-kva.test',
    });
    // smtp-server decodes the punycode domain of RCPT TO back to Unicode.
    expect(s.messages[0].rcptTo).toEqual(['kim@bücher.test']);
  });

  it('bounces an address without a domain and still delivers the others', async () => {
    const s = await sink();
    publishMx('fine.test');
    const outcomes = await mta(s.port).send(message({ to: ['ok@fine.test'] }), [
      'no-at-sign',
      'ok@fine.test',
    ]);
    expect(outcomes).toEqual([
      expect.objectContaining({ recipient: 'no-at-sign', result: 'bounced', smtpCode: 553 }),
      expect.objectContaining({ recipient: 'ok@fine.test', result: 'delivered' }),
    ]);
  });
});

describe('outbound MTA through a smarthost', () => {
  it('relays everything through the smarthost with AUTH, without MX look-ups', async () => {
    const s = await sink({ auth: { user: 'relay-user', pass: 'p@ss:word' } });
    const out = mta(1, {
      dnsServers: [`127.0.0.1:${await closedPort()}`],
      smarthostUrl: `smtp://relay-user:${encodeURIComponent('p@ss:word')}@127.0.0.1:${s.port}`,
    });
    const outcomes = await out.send(message({ to: ['a@nowhere.invalid', 'b@elsewhere.invalid'] }), [
      'a@nowhere.invalid',
      'b@elsewhere.invalid',
    ]);
    expect(outcomes.map((o) => o.result)).toEqual(['delivered', 'delivered']);
    expect(outcomes[0].mx).toBe('127.0.0.1');
    expect(s.messages).toHaveLength(1);
    expect(s.messages[0].user).toBe('relay-user');
    expect(s.messages[0].rcptTo).toEqual(['a@nowhere.invalid', 'b@elsewhere.invalid']);
  });

  it('defers (never bounces) when the smarthost refuses the credentials', async () => {
    const s = await sink({ auth: { user: 'relay-user', pass: 'right' } });
    const out = mta(1, { smarthostUrl: `smtp://relay-user:wrong@127.0.0.1:${s.port}` });
    const [outcome] = await out.send(message({ to: ['a@nowhere.invalid'] }), ['a@nowhere.invalid']);
    expect(outcome.result).toBe('deferred');
    expect(outcome.smtpResponse).toContain('535');
    expect(s.messages).toHaveLength(0);
  });

  it('speaks implicit TLS to an smtps:// smarthost', async () => {
    const s = await sink({ implicitTls: true, auth: { user: 'u', pass: 'p' } });
    const out = mta(1, { smarthostUrl: `smtps://u:p@127.0.0.1:${s.port}` });
    const [outcome] = await out.send(message({ to: ['a@nowhere.invalid'] }), ['a@nowhere.invalid']);
    expect(outcome).toMatchObject({ result: 'delivered', tls: true });
    expect(s.messages[0].secure).toBe(true);
  });
});
