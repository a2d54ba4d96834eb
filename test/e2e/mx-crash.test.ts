import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { addVerifiedDomain, domainEnv } from '../support/domains.ts';
import { killUnderLoad } from '../support/kill-under-load.ts';
import { PATIENCE_MS } from '../support/patience.ts';
import { createOrgWithCli, freePort, startServer, useServiceEnv } from '../support/process.ts';
import { type ApiClient, apiClient } from '../support/service.ts';
import { useTempDir } from '../support/temp-dir.ts';

/**
 * The MX killed (SIGKILL) while sessions send to it, then started again on the same database and data dir: every
 * message answered 250 is recorded exactly once; one that got no answer is recorded once at most. On the machine's
 * PostgreSQL and on the embedded one (its server left behind by the killed process is stopped by the next start).
 */

const SESSIONS = 6;
const DOMAIN = 'inbound-crash.test';

let dns: TestDnsServer;
beforeAll(async () => {
  dns = await startDnsServer();
});
afterAll(() => dns.close());
const machine = useServiceEnv();
const embeddedDir = useTempDir('mx-crash-embedded');

/** How many times each subject was recorded, read through the API page by page. */
async function subjectCounts(api: ApiClient): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let after = '';
  for (;;) {
    const page = await api.get(`/v1/emails/received?limit=100${after && `&starting_after=${after}`}`);
    for (const e of page.body.data) counts.set(e.subject, (counts.get(e.subject) ?? 0) + 1);
    if (!page.body.has_more) return counts;
    after = page.body.data[page.body.data.length - 1].id;
  }
}

describe.each([
  ['the machine', () => machine.env],
  ['the embedded', () => ({ POSTLINE_DATA_DIR: embeddedDir, DATABASE_URL: '', REDIS_URL: '' })],
])('kill -9 under an MX load, on %s PostgreSQL', (_, base) => {
  it('keeps every message answered 250 exactly once after a restart', async () => {
    const [port, mxPort] = [await freePort(), await freePort()];
    const env: Record<string, string> = {
      ...base(),
      RATE_LIMIT_RPS: '100000',
      ...domainEnv(dns),
      PORT: String(port),
      SMTP_MX_PORT: String(mxPort),
    };
    let server = await startServer(env);
    const org = await createOrgWithCli(env, 'Inbound crash', 'business');
    const api = apiClient(`http://127.0.0.1:${port}`, org.live_key);
    await addVerifiedDomain(api, dns, DOMAIN, { inbound_enabled: true });

    // One connection a message (no pool), as most senders do.
    const mx = nodemailer.createTransport({
      host: '127.0.0.1',
      port: mxPort,
      secure: false,
      ignoreTLS: true,
    });
    let sent = 0;
    const send = async () => {
      const subject = `crash-${sent++}`;
      const info = await mx.sendMail({
        envelope: { from: 'ann@remote.test', to: [`support@${DOMAIN}`] },
        from: 'ann@remote.test',
        to: `support@${DOMAIN}`,
        subject,
        text: 'x'.repeat(2000),
        attachments: [{ filename: 'a.txt', content: 'attached' }],
      });
      return info.response.startsWith('250') ? subject : undefined;
    };
    const acknowledged = await killUnderLoad(server.child, Array(SESSIONS).fill(send), 60);
    mx.close();

    server = await startServer(env);
    try {
      // Every acknowledged message is listed once the projection has caught up.
      const missing = async () => {
        const recorded = await subjectCounts(api);
        return acknowledged.filter((s) => !recorded.has(s));
      };
      await expect.poll(missing, { timeout: PATIENCE_MS }).toEqual([]);
      const recorded = await subjectCounts(api);
      expect([...recorded].filter(([, n]) => n !== 1)).toEqual([]);
      // Its stored content is there too: each one's bodies read back.
      const list = await api.get('/v1/emails/received?limit=5');
      for (const e of list.body.data) {
        const one = await api.get(`/v1/emails/received/${e.id}`);
        expect(one.body.text_body).toBe('x'.repeat(2000));
      }
    } finally {
      await server.stop();
    }
  }, 300_000);
});
