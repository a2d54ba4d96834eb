import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseUrl } from '../support/databases.ts';
import { freePort, runCli, startServer } from '../support/process.ts';
import { apiClient } from '../support/service.ts';

let env: Record<string, string>;
let drop: () => Promise<void>;
const dataDir = mkdtempSync(join(tmpdir(), 'postline-pg-e2e-'));

beforeAll(async () => {
  const db = await createTestDatabaseUrl();
  drop = db.drop;
  env = {
    DATABASE_URL: db.url,
    POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
    POSTLINE_DATA_DIR: dataDir,
    REDIS_URL: '',
  };
});
afterAll(async () => {
  await drop?.();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('two processes on one PostgreSQL database', () => {
  it('share their data: a key deleted through one is refused by the other as soon as the NOTIFY arrives', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const a = await startServer({ ...env, PORT: String(portA) });
    const b = await startServer({ ...env, PORT: String(portB) });
    try {
      // The CLI works directly against PostgreSQL while the servers run.
      const created = await runCli(['orgs', 'create', '--name', 'Acme', '--plan', 'pro', '--json'], env);
      expect(created.code, created.stderr).toBe(0);
      const org = JSON.parse(created.stdout);
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
      // milliseconds, but another process's answer may come first.
      let refused = await extraOnB.get('/v1/api-keys');
      for (let i = 0; i < 50 && refused.status === 200; i++) {
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
  }, 120_000);
});
