import nodemailer from 'nodemailer';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { addVerifiedDomain, domainEnv } from '../support/domains.ts';
import { PATIENCE_MS } from '../support/patience.ts';
import { createOrgWithCli, freePort, startServer, useServiceEnv } from '../support/process.ts';
import { apiClient } from '../support/service.ts';

/**
 * The MX killed (SIGKILL) while sessions send to it, then started again on the same database and data dir: every
 * message answered 250 is recorded exactly once; one that got no answer is recorded once at most.
 */

const SESSIONS = 6;
const DOMAIN = 'inbound-crash.test';

let dns: TestDnsServer;
beforeAll(async () => {
  dns = await startDnsServer();
});
afterAll(() => dns.close());
const setup = useServiceEnv();

describe('kill -9 under an MX load', () => {
  it('keeps every message answered 250 exactly once after a restart', async () => {
    const [port, mxPort] = [await freePort(), await freePort()];
    const env: Record<string, string> = {
      ...setup.env,
      ...domainEnv(dns),
      PORT: String(port),
      SMTP_MX_PORT: String(mxPort),
    };
    let server = await startServer(env);
    const org = await createOrgWithCli(env, 'Inbound crash', 'business');
    const api = apiClient(`http://127.0.0.1:${port}`, org.live_key);
    await addVerifiedDomain(api, dns, DOMAIN, { inbound_enabled: true });

    const acknowledged: string[] = [];
    let sent = 0;
    let killed = false;
    const session = async () => {
      const mx = nodemailer.createTransport({
        host: '127.0.0.1',
        port: mxPort,
        secure: false,
        ignoreTLS: true,
      });
      try {
        while (!killed) {
          const subject = `crash-${sent++}`;
          const ok = await mx
            .sendMail({
              envelope: { from: 'ann@remote.test', to: [`support@${DOMAIN}`] },
              from: 'ann@remote.test',
              to: `support@${DOMAIN}`,
              subject,
              text: 'x'.repeat(2000),
              attachments: [{ filename: 'a.txt', content: 'attached' }],
            })
            .then(
              (info) => info.response.startsWith('250'),
              () => false,
            );
          if (ok) acknowledged.push(subject);
        }
      } finally {
        mx.close();
      }
    };
    const load = Promise.all(Array.from({ length: SESSIONS }, session));
    await expect.poll(() => acknowledged.length, { timeout: PATIENCE_MS }).toBeGreaterThanOrEqual(60);
    server.child.kill('SIGKILL');
    killed = true;
    await load;

    server = await startServer(env);
    const db = new pg.Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    try {
      const counts = async () =>
        new Map(
          (
            await db.query<{ subject: string; n: number }>(
              'SELECT subject, count(*)::int AS n FROM received_emails GROUP BY subject',
            )
          ).rows.map((r) => [r.subject, r.n]),
        );
      // Every acknowledged message is read back from the log once the projection has caught up.
      const missing = async () => {
        const recorded = await counts();
        return acknowledged.filter((s) => !recorded.has(s));
      };
      await expect.poll(missing, { timeout: PATIENCE_MS }).toEqual([]);
      const recorded = await counts();
      expect(acknowledged.filter((s) => recorded.get(s) !== 1)).toEqual([]);
      expect([...recorded.values()].filter((n) => n !== 1)).toEqual([]);
      // Its stored content is there too: each one's bodies read back.
      const list = await api.get(`/v1/emails/received?limit=5`);
      for (const e of list.body.data) {
        const one = await api.get(`/v1/emails/received/${e.id}`);
        expect(one.body.text_body).toBe('x'.repeat(2000));
      }
    } finally {
      await db.end();
      await server.stop();
    }
  });
});
