import { describe, expect, it } from 'vitest';
import { createOrgWithCli, freePort, startServer, useServiceEnv } from '../support/process.ts';
import { apiClient } from '../support/service.ts';

// B is asked every 20 ms until it refuses the key: above the default rate limit (10 requests a second an
// organization), a slow NOTIFY would end the wait with a 429 instead of the 401 it waits for.
const setup = useServiceEnv({ RATE_LIMIT_RPS: '100000' });

describe('two processes on one PostgreSQL database', () => {
  it('share their data: a key deleted through one is refused by the other as soon as the NOTIFY arrives', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const a = await startServer({ ...setup.env, PORT: String(portA) });
    const b = await startServer({ ...setup.env, PORT: String(portB) });
    try {
      // The CLI works directly against PostgreSQL while the servers run.
      const org = await createOrgWithCli(setup.env, 'Acme', 'pro');
      const viaA = apiClient(`http://127.0.0.1:${portA}`, org.live_key);
      const viaB = apiClient(`http://127.0.0.1:${portB}`, org.live_key);
      expect((await viaA.get('/v1/api-keys')).status).toBe(200);
      expect((await viaB.get('/v1/api-keys')).status).toBe(200);

      const extra = await viaA.post('/v1/api-keys', { name: 'rotating' });
      expect(extra.status).toBe(201);
      const extraOnB = apiClient(`http://127.0.0.1:${portB}`, extra.body.key);
      expect((await extraOnB.get('/v1/api-keys')).body.data.map((k: any) => k.id)).toContain(extra.body.id);

      expect((await viaA.delete(`/v1/api-keys/${extra.body.id}`)).status).toBe(200);
      // B answers keys from memory (warmed above) until the api_keys projection's NOTIFY tells it of the change:
      // milliseconds, but another process's answer may come first. Waited for up to 7 s, below the 10 s after
      // which B's memory reads the database anyway, so that only the NOTIFY can be what refused it.
      let refused = await extraOnB.get('/v1/api-keys');
      for (const end = Date.now() + 7_000; refused.status === 200 && Date.now() < end; ) {
        await new Promise((r) => setTimeout(r, 20));
        refused = await extraOnB.get('/v1/api-keys');
      }
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('invalid_api_key');
    } finally {
      await a.stop();
      await b.stop();
    }
    expect(a.child.exitCode).toBe(0);
    expect(b.child.exitCode).toBe(0);
  });
});
