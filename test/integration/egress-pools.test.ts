import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../bin/cli/commands.ts';
import { egressPolicyOf, parseSourcesFile } from '../../domain/delivery/egress-file.ts';
import { nextDayStart, utcDay } from '../../domain/delivery/egress-warmup.ts';
import { ManualClock } from '../../platform/clock.ts';
import { loadConfig } from '../../platform/config.ts';
import { BroadcastExpansionProcess } from '../../processes/broadcasts/broadcast-expansion.process.ts';
import { DeliveryProcess } from '../../processes/delivery/delivery.process.ts';
import { EgressSources } from '../../processes/delivery/egress/egress-sources.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import { emailHistory, readEmail } from '../support/emails.ts';
import type { TestOrg } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

/**
 * Egress pools on loopback: the receiving server (127.0.0.1) records the address each message came from and the
 * name its client said in EHLO. Acme's pool is 127.0.0.2 (first day of its warm-up) and 127.0.0.4 (warm); Beta's
 * is 127.0.0.3 alone (first day). The warm-up allows 3 messages a day at the destination's group on day 1.
 */
let mx: SmtpSink;
let acme: TestOrg;
let beta: TestOrg;
let delivery: DeliveryProcess;
const clock = new ManualClock('2026-11-28T09:00:00Z');
const HELO = {
  '127.0.0.2': 'out2.postline.test',
  '127.0.0.3': 'out3.postline.test',
  '127.0.0.4': 'out4.postline.test',
  '127.0.0.5': 'out5.postline.test',
};
const IMPRESSUM = { company_name: 'Acme', address: 'Street 1', country: 'DE', email: 'legal@acme.example' };

beforeAll(async () => {
  mx = await startSmtpSink();
});
const { svc, dns } = useDnsService(() => ({ clock, env: { OUTBOUND_SMTP_PORT: String(mx.port) } }));

/** SOURCES_FILE as the operator writes it, read as start-up reads it (the organizations' ids are known now). */
function sourcesFile(orgs: { beta: string }) {
  const path = join(mkdtempSync(join(tmpdir(), 'postline-egress-')), 'sources.json');
  const source = (n: 2 | 3 | 4 | 5, warm: boolean, weight = 1) => ({
    name: `s${n}`,
    address: `127.0.0.${n}`,
    helo: HELO[`127.0.0.${n}`],
    weight,
    ...(!warm && { warmup: { started: '2026-11-28' } }),
  });
  const json = {
    // s2 takes nearly all of acme's mail while it has room: its cap is what moves the rest to s4.
    sources: [source(2, false, 1000), source(3, false), source(4, true), source(5, true)],
    pools: [
      { name: 'acme-pool', sources: ['s2', 's4'] },
      { name: 'beta-pool', sources: ['s3'] },
      { name: 'bulk', sources: ['s5'] },
    ],
    defaultPool: 'acme-pool',
    broadcastPool: 'bulk',
    organizations: { [orgs.beta]: { transactional: 'beta-pool' } },
    warmup: { default: [3] },
  };
  writeFileSync(path, JSON.stringify(json));
  return egressPolicyOf(loadConfig({ SOURCES_FILE: path }));
}

beforeAll(async () => {
  acme = await svc.createOrg('pro');
  beta = await svc.createOrg('pro');
  const domain = await addVerifiedDomain(acme.live, dns, 'acme-egress.test');
  expect((await acme.live.patch(`/v1/domains/${domain.id}`, { impressum: IMPRESSUM })).status).toBe(200);
  await addVerifiedDomain(beta.live, dns, 'beta-egress.test');
  dns.set('warm.test', 'MX', [{ exchange: 'mx.warm.test', priority: 10 }]);
  dns.set('mx.warm.test', 'A', ['127.0.0.1']);
  svc.postline.services.policies.egress = sourcesFile({ beta: beta.orgId });
  delivery = new DeliveryProcess(svc.postline.services);
});
afterAll(async () => {
  await delivery?.stop();
  await mx?.close();
});

const send = async (org: TestOrg, from: string, to: string) => {
  const r = await org.live.post('/v1/emails', { from, subject: 'Hello', text: 'Hi', to });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.id as string;
};
/** The messages the receiving server took from each address, for the recipients of a prefix. */
const arrivals = (prefix: string) => {
  const by: Record<string, number> = {};
  for (const m of mx.messages.filter((m) => m.rcptTo[0].startsWith(prefix)))
    by[m.remoteAddress] = (by[m.remoteAddress] ?? 0) + 1;
  return by;
};
async function cli(...argv: string[]) {
  let output = '';
  const out = new Writable({
    write(chunk, _enc, done) {
      output += chunk.toString();
      done();
    },
  });
  const code = await runCommand(argv, svc.postline, out);
  return { code, output };
}

describe('egress pools with warm-up, on loopback', () => {
  it('sends each organization’s mail only from its pool, with the HELO name of the address; a first-day source never passes its cap, the excess moves or waits, nothing is lost', async () => {
    // Given: 10 emails of Acme's and 5 of Beta's to one destination group (mx:mx.warm.test)
    const acmeIds = [];
    for (let i = 0; i < 10; i++)
      acmeIds.push(await send(acme, 'Acme <hi@acme-egress.test>', `a${i}@warm.test`));
    const betaIds = [];
    for (let i = 0; i < 5; i++)
      betaIds.push(await send(beta, 'Beta <hi@beta-egress.test>', `b${i}@warm.test`));

    // When: delivery runs on the sources' first day
    await delivery.runOnce();
    await mx.waitForMessages(13);

    // Then: every message came from an address of its organization's pool, saying that address's name
    for (const m of mx.messages) expect(m.heloName).toBe(HELO[m.remoteAddress as keyof typeof HELO]);
    // Acme's first-day source took its cap of 3; the rest moved to the warm source of the same pool.
    expect(arrivals('a')).toEqual({ '127.0.0.2': 3, '127.0.0.4': 7 });
    // Beta's only source took its 3; the other 2 wait for tomorrow, unattempted (queued, no retry spent).
    expect(arrivals('b')).toEqual({ '127.0.0.3': 3 });
    const waiting = [];
    for (const id of betaIds) {
      const email = await readEmail(svc, beta.live, id);
      if (email.status !== 'delivered') waiting.push(email);
    }
    expect(waiting.map((e) => e.status)).toEqual(['queued', 'queued']);
    const used = await svc.postline.services.db.query(
      'SELECT source, grp, used FROM egress_warmup WHERE day = $1 ORDER BY source',
      ['2026-11-28'],
    );
    expect(used.rows).toEqual([
      { source: 's2', grp: 'mx:mx.warm.test', used: 3 },
      { source: 's3', grp: 'mx:mx.warm.test', used: 3 },
    ]);

    // And `postline sources` shows each source's day, cap and use
    const listed = await cli('sources', '--json');
    expect(listed.code).toBe(0);
    const rows = listed.output
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.find((r) => r.source === 's2')).toMatchObject({
      pools: ['acme-pool'],
      address: '127.0.0.2',
      helo: 'out2.postline.test',
      warmup: { started: '2026-11-28', day: 1 },
      groups: expect.arrayContaining([
        { group: 'mx:mx.warm.test', cap: 3, used: 3 },
        { group: 'google', cap: 50, used: 0 },
      ]),
    });
    expect(rows.find((r) => r.source === 's4')).toMatchObject({ warmup: null, groups: [] });
    const text = await cli('sources');
    expect(text.output).toMatch(/^SOURCE +POOLS +ADDRESS +HELO +WEIGHT +WARM-UP$/m);
    expect(text.output).toMatch(
      /^s3 +beta-pool +127\.0\.0\.3 +out3\.postline\.test +1 +day 1 \(from 2026-11-28\)$/m,
    );
    expect(text.output).toContain('    mx:mx.warm.test: 3 sent today, cap 3');

    // When: the next day begins (day 2: past the ramp, no cap)
    clock.set('2026-11-29T00:00:01Z');
    await delivery.runOnce();
    await mx.waitForMessages(15);

    // Then: Beta's waiting mail left from its pool's source; every email is delivered once
    expect(arrivals('b')).toEqual({ '127.0.0.3': 5 });
    expect(mx.messages).toHaveLength(15);
    const all = [...acmeIds.map((id) => [acme, id] as const), ...betaIds.map((id) => [beta, id] as const)];
    for (const [org, id] of all) expect((await readEmail(svc, org.live, id)).status).toBe('delivered');
    // The attempt names the source it left from, for an auditor.
    const attempt = (await emailHistory(svc, betaIds[0])).find(
      (e) => e.type === 'EmailDeliveryAttemptStarted',
    );
    expect(attempt?.data).toMatchObject({ source: 's3', sourceAddress: '127.0.0.3' });
  });

  it('sends an organization’s broadcasts from the broadcast lane’s pool, apart from its transactional mail', async () => {
    // Given: a broadcast of Acme's to two readers at the same destination
    const audience = (await acme.live.post('/v1/audiences', { name: 'Readers' })).body.id;
    for (const email of ['r0@warm.test', 'r1@warm.test'])
      expect((await acme.live.post('/v1/contacts', { email, audience_ids: [audience] })).status).toBe(201);
    const broadcast = await acme.live.post('/v1/broadcasts', {
      name: 'News',
      audience_id: audience,
      from: 'Acme <news@acme-egress.test>',
      subject: 'News',
      text: 'What is new',
    });
    expect(broadcast.status, JSON.stringify(broadcast.body)).toBe(201);
    expect((await acme.live.post(`/v1/broadcasts/${broadcast.body.id}/send`, {})).status).toBe(200);
    const before = mx.messages.length;
    // When
    await new BroadcastExpansionProcess(svc.postline.services).runOnce();
    await delivery.runOnce();
    await mx.waitForMessages(before + 2);
    // Then: both left from the broadcast pool's address (Acme's transactional mail left from .2 and .4)
    expect(arrivals('r')).toEqual({ '127.0.0.5': 2 });
    for (const m of mx.messages) expect(m.heloName).toBe(HELO[m.remoteAddress as keyof typeof HELO]);
  });

  it('holds a cap across processes: of 20 messages admitted at once by two processes, the cap’s 5 go, a message given back is taken again', async () => {
    // Given: two processes' choosers over one database, a pool whose one source is on day 1 with 5 a day
    const { db } = svc.postline.services;
    const policy = parseSourcesFile({
      sources: [
        {
          name: 'solo',
          address: '127.0.0.6',
          helo: 'solo.postline.test',
          warmup: { started: utcDay(clock.now()) },
        },
      ],
      pools: [{ name: 'solo', sources: ['solo'] }],
      warmup: { default: [5] },
    });
    const processes = [new EgressSources({ db, clock, policy }), new EgressSources({ db, clock, policy })];
    // When
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        processes[i % 2].choose('org_any', 'transactional', 'mx:solo.test'),
      ),
    );
    // Then: 5 admitted, 15 told to wait for the next day
    const admitted = answers.filter((a) => a.ok);
    expect(admitted).toHaveLength(5);
    expect(answers.filter((a) => !a.ok).map((a) => !a.ok && a.until.toISOString())).toEqual(
      Array(15).fill(nextDayStart(clock.now()).toISOString()),
    );
    // A message given back (not sent) makes room for one more, and only one
    if (admitted[0].ok) await processes[0].release(admitted[0].choice);
    const again = await Promise.all(
      [0, 1].map((i) => processes[i].choose('org_any', 'broadcast', 'mx:solo.test')),
    );
    expect(again.map((a) => a.ok)).toEqual(expect.arrayContaining([true, false]));
  });

  it('`postline sources --check` compares each address’s reverse DNS with its HELO name', async () => {
    dns.set('2.0.0.127.in-addr.arpa', 'PTR', ['out2.postline.test.']);
    dns.set('3.0.0.127.in-addr.arpa', 'PTR', ['elsewhere.postline.test.']);
    const checked = await cli('sources', '--check', '--json');
    expect(checked.code).toBe(1);
    const reverse = Object.fromEntries(
      checked.output
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .map((r) => [r.source, r.reverse_dns]),
    );
    expect(reverse).toEqual({
      s2: { names: ['out2.postline.test'], matches: true },
      s3: { names: ['elsewhere.postline.test'], matches: false },
      s4: { names: [], matches: false },
      s5: { names: [], matches: false },
    });
    const text = await cli('sources', '--check');
    expect(text.output).toMatch(/^s2 .* ok$/m);
    expect(text.output).toMatch(/^s3 .* MISMATCH \(elsewhere\.postline\.test\)$/m);
  });
});
