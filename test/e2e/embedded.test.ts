import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { processAlive } from '../../platform/process-alive.ts';
import { killUnderLoad, relayClient, relaySender } from '../support/kill-under-load.ts';
import { PATIENCE } from '../support/patience.ts';
import { createOrgWithCli, expectCleanExit, freePort, runCli, startServer } from '../support/process.ts';
import { apiClient } from '../support/service.ts';
import { useTempDir } from '../support/temp-dir.ts';

const dataDir = useTempDir('e2e');
const crashDir = useTempDir('e2e-crash');

describe('embedded mode (no database configured), as a user runs it', () => {
  it('serves /v1, tells how to get a first key, and the CLI works with and without the server', async () => {
    const env = { POSTLINE_DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '' };
    const port = await freePort();
    const smtpPort = await freePort();
    const started = Date.now();
    const starting = startServer({ ...env, PORT: String(port), SMTP_SUBMISSION_PORT: String(smtpPort) });
    const readyIn = starting.then(() => Date.now() - started);
    // A user may run a command as soon as `npm start` runs: once the server owns the data dir, the command waits
    // for it to listen and to finish starting.
    await vi.waitFor(() => expect(existsSync(join(dataDir, 'owner.json'))).toBe(true), PATIENCE);
    const created = await runCli(['orgs', 'create', '--name', 'Acme', '--json'], env);
    let server = await starting;
    // A figure for the reader (the issue asks under 15 s on an idle machine), not an assertion: machines differ.
    console.info(`first start on an empty data dir, ready in ${await readyIn} ms`);
    let org: any;
    try {
      expect(created.code, created.stderr).toBe(0);
      const lines = created.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      org = JSON.parse(lines[0]);
      expect(Object.keys(org).sort()).toEqual(['live_key', 'org_id', 'test_key']);
      expect(org.live_key).toMatch(/^pk_live_/);
      expect(org.test_key).toMatch(/^pk_test_/);

      const api = apiClient(`http://127.0.0.1:${port}`, org.live_key);
      const keys = await api.get('/v1/api-keys');
      expect(keys.status).toBe(200);
      expect(keys.body.data).toHaveLength(1);

      const status = await runCli(['projections', 'status'], env);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/api_keys\s+0\s/);
      const rebuild = await runCli(['projections', 'rebuild', 'api_keys'], env);
      expect(rebuild.code, rebuild.stderr).toBe(0);
      expect(rebuild.stdout).toContain('100%');
      expect((await api.get('/v1/api-keys')).body.data).toHaveLength(1);

      const history = await runCli(['streams', 'show', `org-${org.org_id}`], env);
      expect(JSON.parse(history.stdout.trim()).type).toBe('OrganizationCreated');
      const unknown = await runCli(['projections', 'rebuild', 'nope'], env);
      expect(unknown.code).toBe(2);

      // The SMTP relay listens too, on its self-signed certificate, and takes the same keys.
      const relay = relayClient(smtpPort, org.test_key);
      const sent = await relay.sendMail({
        from: 'dev@example.test',
        to: 'delivered@simulator.postline.dev',
        subject: 'over SMTP',
        text: 'hi',
      });
      expect(sent.response).toMatch(/^250 2\.0\.0 Ok: queued as em_/);
    } finally {
      await server.stop();
    }
    // On the empty data dir it told the user how to get a first key, and it stopped cleanly.
    expect(server.output()).toContain('npx postline orgs create');
    expectCleanExit(server);

    // With no server running, the CLI opens the data dir itself; the server sees its work when it starts again.
    const offlineOrg = await createOrgWithCli(env, 'Offline');
    // Bound to one address (HOST): the CLI finds the server's admin endpoint there, not on 127.0.0.1.
    const host = '127.0.0.2';
    server = await startServer({ ...env, PORT: String(port), HOST: host });
    try {
      expect(
        (await apiClient(`http://${host}:${port}`, offlineOrg.live_key).get('/v1/api-keys')).status,
      ).toBe(200);
      expect((await apiClient(`http://${host}:${port}`, org.live_key).get('/v1/api-keys')).status).toBe(200);
      const listed = await runCli(['orgs', 'list', '--json'], env);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toContain(offlineOrg.org_id);
    } finally {
      await server.stop();
    }
    expect(server.output()).not.toContain('npx postline orgs create');
  }, 300_000);

  it('recovers after the service is killed (kill -9): its server left behind is stopped, every accepted email kept', async () => {
    const env = { POSTLINE_DATA_DIR: crashDir, DATABASE_URL: '', REDIS_URL: '' };
    const port = await freePort();
    const smtpPort = await freePort();
    // Rate limits high: the senders and the reads that check them go as fast as they can.
    const serverEnv = {
      ...env,
      PORT: String(port),
      SMTP_SUBMISSION_PORT: String(smtpPort),
      RATE_LIMIT_RPS: '100000',
    };
    let server = await startServer(serverEnv);
    let accepted: string[] = [];
    let org: { test_key: string };
    try {
      org = await createOrgWithCli(env, 'Crash');
      const api = apiClient(`http://127.0.0.1:${port}`, org.test_key);
      const relay = relayClient(smtpPort, org.test_key);
      // Only what was answered 200 or 250 counts.
      const viaApi = async () => {
        const r = await api.post('/v1/emails', {
          from: 'Acme <hi@acme.test>',
          to: ['delivered@simulator.postline.dev'],
          subject: 'before the crash',
          html: '<p>x</p>',
        });
        return r.status === 200 ? r.body.id : undefined;
      };
      const viaSmtp = relaySender(relay, { subject: 's', text: 'x' });
      accepted = await killUnderLoad(server.child, [viaApi, viaApi, viaSmtp, viaSmtp], 20);
      relay.close();
    } finally {
      await server.stop();
    }
    // Its PostgreSQL server outlived it (a process group of its own), still holding the data dir.
    const leftBehind = Number(
      readFileSync(join(crashDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0],
    );
    expect(processAlive(leftBehind)).toBe(true);

    // The PostgreSQL server of the killed process is still running on the data dir: the next start stops it first.
    server = await startServer(serverEnv);
    try {
      const api = apiClient(`http://127.0.0.1:${port}`, org.test_key);
      for (const id of accepted) expect((await api.get(`/v1/emails/${id}`)).status, id).toBe(200);
    } finally {
      await server.stop();
    }
    expectCleanExit(server);
    expect(processAlive(leftBehind)).toBe(false);
  }, 300_000);

  it('stops with a message naming the variable when configuration is invalid', async () => {
    const bad = await runCli(['serve'], { POSTLINE_DATA_DIR: dataDir, PORT: 'not-a-port' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('PORT');
    const badUrl = await runCli(['projections', 'status'], { DATABASE_URL: 'mysql://x' });
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toContain('DATABASE_URL');
  });
});
