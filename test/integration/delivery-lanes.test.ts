import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DueQueue } from '../../platform/due/due-queue.ts';
import { BroadcastExpansionProcess } from '../../processes/broadcasts/broadcast-expansion.process.ts';
import { DeliveryProcess } from '../../processes/delivery/delivery.process.ts';
import { deliveryJobs, type Job, jobRow, listQueues } from '../../processes/delivery/delivery-jobs.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import { emailEventTypes } from '../support/emails.ts';
import { PATIENCE } from '../support/patience.ts';
import type { ApiClient, TestOrg } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

/** Broadcast emails of the backlog: more than a queue's cap per process (40), so some wait unclaimed. */
const BACKLOG = 45;
const IMPRESSUM = { company_name: 'Acme', address: 'Street 1', country: 'DE', email: 'legal@acme.example' };

let fast: SmtpSink;
/** The slow destination (slow.test, its MX on 127.0.0.2): answers each message's data once `release` is called. */
let slow: SmtpSink;
let release: () => void;
let acme: TestOrg;
let other: TestOrg;
let delivery: DeliveryProcess | undefined;

beforeAll(async () => {
  fast = await startSmtpSink();
  const gate = Promise.withResolvers<void>();
  release = () => gate.resolve();
  slow = await startSmtpSink({ host: '127.0.0.2', port: fast.port, hold: () => gate.promise });
});
const { svc, dns } = useDnsService(() => ({ env: { OUTBOUND_SMTP_PORT: String(fast.port) } }));
beforeAll(async () => {
  for (const [domain, address] of [
    ['rcpt.test', '127.0.0.1'],
    ['slow.test', '127.0.0.2'],
  ]) {
    dns.set(domain, 'MX', [{ exchange: `mx.${domain}`, priority: 10 }]);
    dns.set(`mx.${domain}`, 'A', [address]);
  }
  acme = await svc.createOrg('pro');
  other = await svc.createOrg('pro');
  const domain = await addVerifiedDomain(acme.live, dns, 'acme-send.test');
  ok(await acme.live.patch(`/v1/domains/${domain.id}`, { impressum: IMPRESSUM }));
  await addVerifiedDomain(other.live, dns, 'other-send.test');
});
afterAll(async () => {
  release?.();
  await delivery?.stop();
  await slow?.close();
  await fast?.close();
});

const ok = (r: { status: number; body: any }, status = 200) => {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
};
const send = async (client: ApiClient, from: string, to: string) =>
  ok(await client.post('/v1/emails', { from, to: [to], subject: 'Your code', text: '123456' })).id as string;
const count = async (sql: string) => (await svc.postline.services.db.query<{ n: number }>(sql)).rows[0].n;

describe('delivery lanes', () => {
  it('claims a transactional job first, no more of one queue than its cap, and broadcasts in turn within theirs', async () => {
    const { db, clock, log } = svc.postline.services;
    const job = (email_id: string, org_id: string, lane: Job['lane'], dueAt: string) =>
      jobRow(
        {
          email_id,
          destination: lane === 'broadcast' ? 'slow.test' : 'rcpt.test',
          org_id,
          mode: 'live',
          lane,
        },
        dueAt,
      );
    const longAgo = (i: number) => new Date(Date.parse('2026-01-01T00:00:00Z') + i).toISOString();
    const jobs = [
      // Two organizations' broadcasts, A's 200 emails older than C's 50.
      ...Array.from({ length: 200 }, (_, i) => job(`em_claim${i}`, 'org_claim_a', 'broadcast', longAgo(i))),
      ...Array.from({ length: 50 }, (_, i) =>
        job(`em_claim_c${i}`, 'org_claim_c', 'broadcast', longAgo(1000 + i)),
      ),
      job('em_claim_tx', 'org_claim_b', 'transactional', clock.now().toISOString()),
    ];
    await db.query(`DELETE FROM delivery_jobs`);
    const queue = new DueQueue<Job>({ db, clock, log }, deliveryJobs({ perQueue: 20, broadcastHeld: 30 }));
    await queue.add(db, jobs);
    await listQueues(db, jobs);
    try {
      const first = await queue.claim(10);
      expect(first.map((j) => [j.email_id, j.lane])).toEqual([
        ['em_claim_tx', 'transactional'],
        // The queues in turn, each one's oldest before any one's second: C's beside A's older ones.
        ...Array.from({ length: 5 }, (_, i) => [`em_claim${i}`, 'broadcast']),
        ...Array.from({ length: 4 }, (_, i) => [`em_claim_c${i}`, 'broadcast']),
      ]);
      // The caps count what this process holds already: 30 broadcast jobs in all, still in turn (A's first), and
      // no queue past its 20.
      const then = await queue.claim(100);
      const of = (rows: Job[], org: string) => rows.filter((j) => j.org_id === org).length;
      expect([of([...first, ...then], 'org_claim_a'), of([...first, ...then], 'org_claim_c')]).toEqual([
        16, 14,
      ]);
      expect(await queue.claim(100)).toEqual([]);
    } finally {
      await db.query(`DELETE FROM delivery_jobs WHERE org_id LIKE 'org_claim_%'`);
    }
  });

  it("delivers another organization's transactional email, and the sender's own, while its broadcast backlog is held at a slow destination", async () => {
    // Organization A's broadcast to BACKLOG contacts at slow.test, through the real broadcast path.
    const audience = ok(await acme.live.post('/v1/audiences', { name: 'Readers' }), 201).id;
    for (let i = 0; i < BACKLOG; i++)
      ok(
        await acme.live.post('/v1/contacts', { email: `reader${i}@slow.test`, audience_ids: [audience] }),
        201,
      );
    const broadcast = ok(
      await acme.live.post('/v1/broadcasts', {
        name: 'News',
        audience_id: audience,
        from: 'Acme <news@acme-send.test>',
        subject: 'News',
        text: 'What is new',
      }),
      201,
    );
    ok(await acme.live.post(`/v1/broadcasts/${broadcast.id}/send`, {}));
    await new BroadcastExpansionProcess(svc.postline.services).runOnce();

    delivery = new DeliveryProcess(svc.postline.services);
    delivery.start();
    // The slow destination holds every connection the MTA opens to it (5); the other broadcast jobs claimed (30 at most
    // a process) wait for one.
    await vi.waitFor(() => expect(slow.holding).toBe(5), PATIENCE);
    const held = `SELECT count(*)::int AS n FROM delivery_jobs WHERE lane = 'broadcast' AND claimed_until > now()`;
    await vi.waitFor(async () => expect(await count(held)).toBe(30), PATIENCE);

    const theirs = await send(other.live, 'Other <hi@other-send.test>', 'bob@rcpt.test');
    const own = await send(acme.live, 'Acme <hi@acme-send.test>', 'ann@rcpt.test');
    for (const id of [theirs, own])
      await vi.waitFor(
        async () => expect(await emailEventTypes(svc, id)).toContain('EmailDelivered'),
        PATIENCE,
      );
    expect(fast.messages.flatMap((m) => m.rcptTo).sort()).toEqual(['ann@rcpt.test', 'bob@rcpt.test']);
    // Meanwhile not one broadcast message got through: the whole backlog is still queued.
    expect(slow.messages).toHaveLength(0);
    expect(slow.holding).toBe(5);
    expect(await count(`SELECT count(*)::int AS n FROM delivery_jobs WHERE lane = 'broadcast'`)).toBe(
      BACKLOG,
    );

    release();
    await slow.waitForMessages(BACKLOG);
    await vi.waitFor(
      async () => expect(await count('SELECT count(*)::int AS n FROM delivery_jobs')).toBe(0),
      PATIENCE,
    );
  });
});
