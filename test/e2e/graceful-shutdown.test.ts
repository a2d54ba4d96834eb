import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ATTEMPT_LIMIT_MS, ATTEMPT_MARGIN_MS } from '../../processes/delivery/attempts.ts';
import { DELIVERY_JOB_LEASE_MS } from '../../processes/delivery/delivery-jobs.ts';
import { DEFAULT_LEASE_MS as SLOT_LEASE_MS } from '../../processes/delivery/shaping/connection-slots.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { addVerifiedDomain, sendingToLoopbackEnv } from '../support/domains.ts';
import { PATIENCE_MS } from '../support/patience.ts';
import { createOrgWithCli, freePort, startServer, useServiceEnv } from '../support/process.ts';
import { apiClient } from '../support/service.ts';
import { startSmtpSink } from '../support/smtp-sink.ts';

const setup = useServiceEnv({ RATE_LIMIT_RPS: '100000', RATE_LIMIT_BATCH_RPS: '100000' });

/** The email a delivered message belongs to, from its VERP return path `b+<email id>@bounces.<domain>`. */
const emailIdOf = (mailFrom: string) => /^b\+(em_[0-9a-z]+)@/.exec(mailFrom)?.[1];

/**
 * SIGTERM during a send load, as a deploy sends it: the process turns new requests away (503 shutting_down),
 * answers and delivers what it holds, gives its claimed work back, and exits 0; the other process delivers the
 * rest. Every acknowledged email reaches the recipient's server exactly once.
 */
describe('graceful shutdown', () => {
  it('loses and doubles nothing when one of two processes gets SIGTERM under a send load', async () => {
    const dns = await startDnsServer();
    // A slow receiving server keeps deliveries queued behind it, so the stopping process holds claimed work to
    // give back: left to its 10-minute lease, the replacement could not deliver it within this test.
    const mx = await startSmtpSink({ dataDelayMs: 300 });
    // The grace bounds the work in hand, which may take long on a busy machine; it ends once that is done.
    const env = { ...setup.env, ...sendingToLoopbackEnv(dns, mx), SHUTDOWN_GRACE_MS: String(PATIENCE_MS) };
    const [portA, portB] = [await freePort(), await freePort()];
    const a = await startServer({ ...env, PORT: String(portA) });
    // The replacement, as in a rolling deploy: it starts once the old process is told to stop.
    let b: Awaited<ReturnType<typeof startServer>> | undefined;
    try {
      const org = await createOrgWithCli(env, 'Deploy', 'business');
      const viaA = apiClient(`http://127.0.0.1:${portA}`, org.live_key);
      await addVerifiedDomain(viaA, dns, 'deploy.test');

      const acknowledged: string[] = [];
      const refusals = new Map<string, number>();
      let sent = 0;
      const client = async (n: number) => {
        while (a.child.exitCode === null) {
          const body = {
            from: 'hi@deploy.test',
            to: `r${n}-${sent++}@rcpt.test`,
            subject: 'Deploy',
            text: 't',
          };
          try {
            const r = await viaA.post('/v1/emails', body);
            if (r.status === 200) acknowledged.push(r.body.id);
            else
              refusals.set(
                `${r.status} ${r.body?.error?.code}`,
                (refusals.get(`${r.status} ${r.body?.error?.code}`) ?? 0) + 1,
              );
          } catch {
            // The server has closed: nothing was acknowledged on this connection.
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      };
      const clients = Array.from({ length: 8 }, (_, n) => client(n));
      // SIGTERM once the process holds deliveries it has claimed but not started (beyond its 50 in flight).
      const db = new pg.Client({ connectionString: setup.env.DATABASE_URL });
      await db.connect();
      const claimed = async () =>
        (await db.query('SELECT count(*)::int AS n FROM delivery_jobs WHERE claimed_until > now()')).rows[0]
          .n;
      while (acknowledged.length < 150 || (await claimed()) < 70) await new Promise((r) => setTimeout(r, 20));
      await db.end();
      const exited = new Promise((resolve) => a.child.once('exit', resolve));
      a.child.kill('SIGTERM');
      b = await startServer({ ...env, PORT: String(portB) });
      await exited;
      await Promise.all(clients);
      expect(a.child.exitCode).toBe(0);
      // Turned away while draining, in the error shape, never a 5xx of another kind.
      expect([...refusals.keys()].filter((k) => k !== '503 shutting_down')).toEqual([]);

      // The remaining process delivers what the stopped one gave back: each acknowledged email exactly once.
      // Mail the stopped process held comes back once its claims, its attempts in flight and its connection slots
      // run out (at worst one after the other), then as long as any condition.
      const recovery =
        DELIVERY_JOB_LEASE_MS + ATTEMPT_LIMIT_MS + ATTEMPT_MARGIN_MS + SLOT_LEASE_MS + PATIENCE_MS;
      const delivered = new Map<string, number>();
      for (const until = Date.now() + recovery; Date.now() < until; ) {
        delivered.clear();
        for (const m of mx.messages) {
          const id = emailIdOf(m.mailFrom);
          if (id) delivered.set(id, (delivered.get(id) ?? 0) + 1);
        }
        if (acknowledged.every((id) => delivered.has(id))) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(acknowledged.filter((id) => !delivered.has(id))).toEqual([]);
      expect([...delivered.entries()].filter(([, n]) => n > 1)).toEqual([]);
      // And records it: the read model (now projected by the remaining process) shows each delivered.
      const viaB = apiClient(`http://127.0.0.1:${portB}`, org.live_key);
      for (const id of acknowledged.slice(-5))
        await expect.poll(async () => (await viaB.get(`/v1/emails/${id}`)).body.status).toBe('delivered');
    } finally {
      await Promise.all([a.stop(), b?.stop()]);
      await Promise.all([mx.close(), dns.close()]);
    }
  }, 300_000);
});
