import { describe, expect, it } from 'vitest';
import { createOrgWithCli, freePort, runCli, startServer, useServiceEnv } from '../support/process.ts';
import { apiClient } from '../support/service.ts';

/**
 * An organization that deleted its last key (a key may delete itself) is not locked out for ever: an operator
 * gives it a new one from the CLI, with the service running and without, as a user runs them both.
 */
const setup = useServiceEnv();

describe('the CLI, for an organization with no key left', () => {
  it('lists organizations, sets plans, creates and revokes keys, with the service running and without', async () => {
    const org = await createOrgWithCli(setup.env, 'Locked Out', 'pro');
    const port = await freePort();
    const env = { ...setup.env, PORT: String(port) };
    const api = (key: string) => apiClient(`http://127.0.0.1:${port}`, key);

    let server = await startServer(env);
    try {
      // The live key deletes itself: the organization has no live key left.
      const [own] = (await api(org.live_key).get('/v1/api-keys')).body.data;
      expect((await api(org.live_key).delete(`/v1/api-keys/${own.id}`)).status).toBe(200);
      expect((await api(org.live_key).get('/v1/api-keys')).status).toBe(401);

      const listed = await runCli(['orgs', 'list', '--json'], env);
      expect(listed.code, listed.stderr).toBe(0);
      const line = listed.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .find((o) => o.org_id === org.org_id);
      expect(line).toMatchObject({ name: 'Locked Out', plan: 'pro', live_keys: 0, test_keys: 1 });

      // With the service running: a new key works at once, and a revoked one stops at once.
      const made = await runCli(['keys', 'create', '--org', org.org_id, '--mode', 'live', '--json'], env);
      expect(made.code, made.stderr).toBe(0);
      const key = JSON.parse(made.stdout);
      expect(key).toMatchObject({ mode: 'live', permission: 'full_access' });
      expect((await api(key.key).get('/v1/api-keys')).status).toBe(200);
      // The plan an operator sets is the one requests see at once.
      const plan = await runCli(['orgs', 'set-plan', org.org_id, 'business'], env);
      expect(plan.code, plan.stderr).toBe(0);
      expect((await api(key.key).get('/v1/usage')).body.plan).toBe('business');
      const revoked = await runCli(['keys', 'revoke', key.key_id], env);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect((await api(key.key).get('/v1/api-keys')).status).toBe(401);
    } finally {
      await server.stop();
    }

    // Without it: the key made now works once the service is up again.
    const offline = await runCli(['keys', 'create', '--org', org.org_id, '--json'], env);
    expect(offline.code, offline.stderr).toBe(0);
    const later = JSON.parse(offline.stdout);
    server = await startServer(env);
    try {
      expect((await api(later.key).get('/v1/api-keys')).status).toBe(200);
    } finally {
      await server.stop();
    }

    // Mistakes are named: an unknown organization or key is exit code 1, bad arguments 2.
    expect((await runCli(['keys', 'create', '--org', 'org_nope'], env)).code).toBe(1);
    expect((await runCli(['keys', 'revoke', 'key_nope'], env)).code).toBe(1);
    expect((await runCli(['keys', 'create', '--org', org.org_id, '--mode', 'prod'], env)).code).toBe(2);
    expect((await runCli(['orgs', 'set-plan', 'org_nope', 'pro'], env)).code).toBe(1);
    expect((await runCli(['orgs', 'set-plan', org.org_id, 'platinum'], env)).code).toBe(2);
  }, 300_000);
});
