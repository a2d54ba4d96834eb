import { describe, expect, it } from 'vitest';
import { PATIENCE_MS } from '../support/patience.ts';
import { createOrgWithCli, expectCleanExit, freePort, runCli, startServer } from '../support/process.ts';
import { apiClient } from '../support/service.ts';
import { useTempDir } from '../support/temp-dir.ts';

const dataDir = useTempDir('e2e-send');

describe('sending a test-mode email with the service running as a process', () => {
  it('accepts the email, and the simulator delivers and bounces it through the same events as live', async () => {
    const env = { POSTLINE_DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '' };
    const port = await freePort();
    const server = await startServer({ ...env, PORT: String(port) });
    try {
      const org = await createOrgWithCli(env, 'Sender');
      const api = apiClient(`http://127.0.0.1:${port}`, org.test_key);

      const sent = await api.post('/v1/emails', {
        from: 'Sender <hello@sender.example>',
        to: ['delivered@simulator.postline.dev', 'bounced+e2e@simulator.postline.dev'],
        subject: 'Hello from the end-to-end test',
        text: 'Hi!',
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      expect(sent.body.status).toBe('queued');

      // The background processes run in the server: wait for the simulated outcomes to arrive, asking four times
      // a second, well under the default rate limit (10 requests a second a key) that the requests after share.
      let email: any;
      for (const end = Date.now() + PATIENCE_MS; Date.now() < end; ) {
        email = (await api.get(`/v1/emails/${sent.body.id}`)).body;
        if (email.recipients?.every((r: any) => r.status !== 'pending')) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(email.status).toBe('delivered');
      expect(email.recipients.map((r: any) => [r.email, r.status])).toEqual([
        ['bounced+e2e@simulator.postline.dev', 'bounced'],
        ['delivered@simulator.postline.dev', 'delivered'],
      ]);
      const events = await api.get(`/v1/emails/${sent.body.id}/events`);
      expect(events.status, JSON.stringify(events.body)).toBe(200);
      expect(events.body.data.map((e: any) => e.type).slice(0, 3)).toEqual([
        'email.queued',
        'email.sending',
        'email.sent',
      ]);

      // The auditor's view from the CLI shows the same history.
      const history = await runCli(['streams', 'show', `email-${sent.body.id}`], env);
      expect(history.code, history.stderr).toBe(0);
      expect(history.stdout).toContain('"type":"EmailBounced"');

      // The live key cannot see the test email.
      const live = apiClient(`http://127.0.0.1:${port}`, org.live_key);
      expect((await live.get(`/v1/emails/${sent.body.id}`)).status).toBe(404);
    } finally {
      await server.stop();
    }
    expectCleanExit(server);
  }, 300_000);
});
