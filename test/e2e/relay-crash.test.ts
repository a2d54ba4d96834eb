import { describe, expect, it } from 'vitest';
import { killUnderLoad, relayClient, relaySender } from '../support/kill-under-load.ts';
import { PATIENCE_MS } from '../support/patience.ts';
import { createOrgWithCli, freePort, startServer, useServiceEnv } from '../support/process.ts';
import { apiClient } from '../support/service.ts';

/**
 * The SMTP relay killed (SIGKILL) while sessions submit to it, then started again on the same database (the
 * machine's PostgreSQL; test/e2e/embedded.test.ts does the same on the embedded one): every message answered 250
 * is there once after the restart, under the id its 250 named, and goes on to its final status (the simulator
 * delivers test-mode mail).
 */

const SESSIONS = 6;
const setup = useServiceEnv();

describe('kill -9 under a relay load, on the machine’s PostgreSQL', () => {
  it('keeps every message answered 250, and finishes each', async () => {
    const [port, smtpPort] = [await freePort(), await freePort()];
    const env = {
      ...setup.env,
      RATE_LIMIT_RPS: '100000',
      PORT: String(port),
      SMTP_SUBMISSION_PORT: String(smtpPort),
    };
    let server = await startServer(env);
    const org = await createOrgWithCli(env, 'Relay crash', 'business');

    const relay = relayClient(smtpPort, org.test_key);
    const send = relaySender(relay, { subject: 'before the crash', text: 'x'.repeat(2000) });
    const acknowledged = await killUnderLoad(server.child, Array(SESSIONS).fill(send), 60);
    relay.close();

    server = await startServer(env);
    try {
      const api = apiClient(`http://127.0.0.1:${port}`, org.test_key);
      expect(new Set(acknowledged).size).toBe(acknowledged.length);
      const unfinished = async () => {
        const left: string[] = [];
        for (const id of acknowledged) {
          const email = await api.get(`/v1/emails/${id}`);
          if (email.status !== 200 || email.body.last_event !== 'email.delivered') left.push(id);
        }
        return left;
      };
      await expect.poll(unfinished, { timeout: PATIENCE_MS, interval: 500 }).toEqual([]);
    } finally {
      await server.stop();
    }
  }, 300_000);
});
