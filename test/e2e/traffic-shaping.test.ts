import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startDnsServer } from '../support/dns-server.ts';
import { addVerifiedDomain, sendingToLoopbackEnv } from '../support/domains.ts';
import { createOrgWithCli, freePort, startServer, useServiceEnv } from '../support/process.ts';
import { type ApiClient, apiClient } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';
import { useTempDir } from '../support/temp-dir.ts';

const setup = useServiceEnv();
const dir = useTempDir('shaping-e2e');

/** `slowpoke`: 60 a minute, so T = 1 s between messages and a burst of b = 6 (a tenth of the minute's rate). */
const PER_MINUTE = 60;
const T_MS = 60_000 / PER_MINUTE;
const BURST = Math.ceil(PER_MINUTE / 10);
const SHAPING = {
  groups: [
    { name: 'slowpoke', mx: ['mx.slow.test'], connections: 2, messagesPerConnection: 5, perMinute: 60 },
  ],
};
const THROTTLE_AFTER = 20;
const EACH = 40;

/** Every message the sink saw to the end of its DATA, accepted or refused, with when, in order. */
const arrivals = (sink: SmtpSink) =>
  [...sink.messages.map((m) => m.receivedAt), ...sink.refused.map((r) => r.at)].sort(
    (a, b) => a.getTime() - b.getTime(),
  );

const queueOf = async (api: ApiClient, destination: string) =>
  (await api.get('/v1/queue')).body.data.find((d: { destination: string }) => d.destination === destination);

/**
 * Traffic shaping as an installation runs it: one API process and three worker processes on one database, all
 * with a SHAPING_FILE that limits `mx.slow.test` (group `slowpoke`) and says nothing of `mx.fast.test`
 * (unmetered). Two SMTP servers on loopback, one port, two addresses, stand for the two MX hosts; the slow one
 * answers `421 4.7.28` to every message after its 20th. What reaches each is counted there.
 */
describe('traffic shaping across three worker processes', () => {
  it('keeps a group within its rate, backs it off whole on 421 4.7.28, and lets another destination flow', async () => {
    const dns = await startDnsServer();
    const fast = await startSmtpSink();
    const slow = await startSmtpSink({
      host: '127.0.0.2',
      port: fast.port,
      refuseAfter: {
        messages: THROTTLE_AFTER,
        reply: { code: 421, message: '4.7.28 Our system has detected an unusual rate of mail: rate limited' },
      },
    });
    for (const [domain, ip] of [
      ['fast.test', '127.0.0.1'],
      ['slow.test', '127.0.0.2'],
    ]) {
      dns.set(domain, 'MX', [{ exchange: `mx.${domain}`, priority: 10 }]);
      dns.set(`mx.${domain}`, 'A', [ip]);
    }
    const shapingFile = join(dir, 'shaping.json');
    writeFileSync(shapingFile, JSON.stringify(SHAPING));
    const env = { ...setup.env, ...sendingToLoopbackEnv(dns, fast), SHAPING_FILE: shapingFile };
    const port = await freePort();
    const workers = await Promise.all(
      ['workers,projections', 'workers', 'workers'].map((roles) =>
        startServer({ ...env, POSTLINE_ROLES: roles, LOG_LEVEL: 'info' }),
      ),
    );
    const server = await startServer({ ...env, PORT: String(port), POSTLINE_ROLES: 'api' });
    const db = new pg.Client({ connectionString: setup.env.DATABASE_URL });
    await db.connect();
    try {
      const org = await createOrgWithCli(env, 'Shaper', 'pro');
      const api = apiClient(`http://127.0.0.1:${port}`, org.live_key);
      await addVerifiedDomain(api, dns, 'shaper.test');
      /** One batch: an email to `s<i>@slow.test` and one to `f<i>@fast.test` for each i from `from` to `to`. */
      const ids = new Map<string, string>();
      const send = async (from: number, to: number) => {
        const addresses = Array.from({ length: to - from }, (_, i) => [
          `s${from + i}@slow.test`,
          `f${from + i}@fast.test`,
        ]);
        const emails = addresses
          .flat()
          .map((a) => ({ from: 'Shaper <hi@shaper.test>', to: a, subject: 'Hi', text: 'hi' }));
        const r = await api.post('/v1/emails/batch', emails);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        for (const [i, e] of emails.entries()) ids.set(e.to, r.body.data[i].id);
      };

      // When: 40 emails to each destination
      const start = Date.now();
      await send(0, EACH);

      // Then: the unmetered destination gets all its mail while the limited one still has mail queued
      await fast.waitForMessages(EACH);
      const slowQueue = await queueOf(api, 'slow.test');
      expect(slowQueue.queued + slowQueue.deferred + slowQueue.in_flight).toBeGreaterThan(0);

      // And: the slow destination was sent no faster than its rate, across the three processes together. GCRA
      // admits at most b + L/T messages over any interval of length L; every admission is after `start`, and a
      // message reaches the server after its admission, so by the k-th arrival at time t: k <= b + (t - start)/T.
      await slow.waitForMessages(THROTTLE_AFTER);
      await expect.poll(() => slow.refused.length).toBeGreaterThan(0);
      arrivals(slow).forEach((at, i) => {
        expect(i + 1, `arrival ${i + 1} at +${at.getTime() - start} ms`).toBeLessThanOrEqual(
          BURST + Math.floor((at.getTime() - start) / T_MS),
        );
      });

      // And: the 421 backed the whole group off for a minute (the first step of its curve), in the database
      // every process reads
      const group = async () =>
        (await db.query('SELECT held_until, backoff_level FROM shaping_groups WHERE grp = $1', ['slowpoke']))
          .rows[0];
      await expect.poll(async () => (await group())?.backoff_level).toBe(1);
      const { held_until: heldUntil } = await group();
      const ahead = heldUntil.getTime() - slow.refused[0].at.getTime();
      expect(ahead).toBeGreaterThanOrEqual(60_000 - 1000);
      expect(ahead).toBeLessThan(60_000 + 10_000);

      // And: the queue shows the destination held until then, its 20 waiting jobs none in flight
      await expect
        .poll(async () => {
          const q = await queueOf(api, 'slow.test');
          return (
            q && { waiting: q.queued + q.deferred, in_flight: q.in_flight, paused_until: q.paused_until }
          );
        })
        .toEqual({ waiting: EACH - THROTTLE_AFTER, in_flight: 0, paused_until: heldUntil.toISOString() });

      // And: the recipients refused with 421 are delayed, neither bounced nor suppressed
      const refusedTo = slow.refused.flatMap((r) => r.rcptTo);
      for (const address of refusedTo) {
        await expect
          .poll(async () => (await api.get(`/v1/emails/${ids.get(address)}`)).body.recipients[0])
          .toMatchObject({ email: address, status: 'delayed', smtp_code: 421 });
      }
      const suppressed = (await api.get('/v1/suppressions')).body.data.map((s: { email: string }) => s.email);
      expect(suppressed.filter((a: string) => a.endsWith('@slow.test'))).toEqual([]);

      // And: while held, the workers keep delivering elsewhere and send nothing to the slow destination
      const seen = arrivals(slow).length;
      await send(EACH, EACH + 10);
      await fast.waitForMessages(EACH + 10);
      await expect
        .poll(async () => {
          const q = await queueOf(api, 'slow.test');
          return q && { waiting: q.queued + q.deferred, in_flight: q.in_flight };
        })
        .toEqual({ waiting: EACH - THROTTLE_AFTER + 10, in_flight: 0 });
      expect(arrivals(slow).length).toBe(seen);
      expect(slow.messages).toHaveLength(THROTTLE_AFTER);
    } finally {
      await db.end();
      await Promise.all([server.stop(), ...workers.map((w) => w.stop())]);
      await Promise.all([fast.close(), slow.close(), dns.close()]);
    }
    expect([server, ...workers].map((s) => s.child.exitCode)).toEqual([0, 0, 0, 0]);
  });
});
