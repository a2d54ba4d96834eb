import { describe, expect, it } from 'vitest';
import { startDnsServer } from '../support/dns-server.ts';
import { addVerifiedDomain, sendingToLoopbackEnv } from '../support/domains.ts';
import { createOrgWithCli, freePort, runCli, startServer, useServiceEnv } from '../support/process.ts';
import { apiClient } from '../support/service.ts';
import { startSmtpSink } from '../support/smtp-sink.ts';
import { startWebhookReceiver } from '../support/webhook-receiver.ts';

const setup = useServiceEnv();

/**
 * The production topology on loopback: two API processes (POSTLINE_ROLES=api,smtp) and one that runs the
 * projections and the process managers, all on one PostgreSQL database. A send through one API is delivered by
 * the workers to a real SMTP server, read back through the other API, and fanned out to a webhook receiver.
 */
describe('processes split by role', () => {
  it('sends through one API process, delivers and fans out in the workers process, reads through the other', async () => {
    const dns = await startDnsServer();
    const mx = await startSmtpSink();
    const receiver = await startWebhookReceiver();
    const env = { ...setup.env, ...sendingToLoopbackEnv(dns, mx), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };
    const [portA, portB, portW] = [await freePort(), await freePort(), await freePort()];
    const workers = await startServer({
      ...env,
      PORT: String(portW),
      POSTLINE_ROLES: 'workers,projections',
      LOG_LEVEL: 'info',
    });
    const a = await startServer({ ...env, PORT: String(portA), POSTLINE_ROLES: 'api,smtp' });
    const b = await startServer({ ...env, PORT: String(portB), POSTLINE_ROLES: 'api' });
    try {
      const org = await createOrgWithCli(env, 'Split', 'pro');
      const viaA = apiClient(`http://127.0.0.1:${portA}`, org.live_key);
      const viaB = apiClient(`http://127.0.0.1:${portB}`, org.live_key);
      await addVerifiedDomain(viaA, dns, 'split.test');
      const hook = await receiver.subscribe(viaB, ['email.delivered']);

      const sent = await viaA.post('/v1/emails', {
        from: 'Split <hi@split.test>',
        to: 'ann@rcpt.test',
        subject: 'Across processes',
        text: 'hello',
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      const [message] = await mx.waitForMessages(1);
      expect(message.rcptTo).toEqual(['ann@rcpt.test']);

      await expect
        .poll(async () => (await viaB.get(`/v1/emails/${sent.body.id}`)).body.status)
        .toBe('delivered');
      await receiver.waitFor(2); // the webhook's test event, then the delivery
      const [delivered] = receiver.ofType('email.delivered');
      expect(delivered?.payload.data.email_id).toBe(sent.body.id);
      expect(delivered?.verifiedWith).toEqual([hook.signing_secret]);

      // Each process counts what it did, and every one serves /metrics: the API accepted, the workers delivered.
      const counter = async (port: number, outcome: string) => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        const line = text
          .split('\n')
          .find((l) => l.startsWith(`postline_emails_total{outcome="${outcome}",mode="live"}`));
        return Number(line?.split(' ')[1] ?? 0);
      };
      expect(await counter(portA, 'accepted')).toBe(1);
      expect(await counter(portW, 'delivered')).toBe(1);
      expect(await counter(portW, 'accepted')).toBe(0);
      // The workers process serves health and metrics, no API.
      expect((await fetch(`http://127.0.0.1:${portW}/healthz`)).status).toBe(200);
      const noApi = await fetch(`http://127.0.0.1:${portW}/v1/emails`);
      expect([noApi.status, (await noApi.json()).error.code]).toEqual([404, 'route_not_found']);
    } finally {
      await Promise.all([a.stop(), b.stop(), workers.stop()]);
      await Promise.all([mx.close(), receiver.close(), dns.close()]);
    }
    expect([a.child.exitCode, b.child.exitCode, workers.child.exitCode]).toEqual([0, 0, 0]);
  });

  it('refuses roles on the embedded database, naming the variable', async () => {
    const bad = await runCli(['serve'], {
      POSTLINE_DATA_DIR: setup.env.POSTLINE_DATA_DIR,
      POSTLINE_ROLES: 'api',
    });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('POSTLINE_ROLES');
    const unknown = await runCli(['serve'], { ...setup.env, POSTLINE_ROLES: 'api,mailer' });
    expect(unknown.stderr).toContain('POSTLINE_ROLES: must be all or a comma-separated list');
  });
});
