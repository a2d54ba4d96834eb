import { createHash } from 'node:crypto';
import pg from 'pg';
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

    // A usage mistake is said on standard error, exit code 2, and nothing is done: extra arguments are one too.
    const mistakes = [
      [[], /^Usage: postline/],
      [
        ['orgs', 'set-plan', org.org_id, 'pro', 'extra'],
        /orgs set-plan needs <org_id> <free\|pro\|business>/,
      ],
      [['keys', 'revoke', later.key_id, 'extra'], /keys revoke needs <key_id>/],
      [['keys', 'revoke', '--json', later.key_id], /keys revoke needs <key_id>/],
      [['streams', 'show', `org-${org.org_id}`, 'extra'], /streams show needs <stream-id>/],
      [['projections', 'status', 'extra'], /projections status takes no arguments/],
      [['projections', 'rebuild', 'api_keys', 'extra'], /projections rebuild takes one projection's name/],
      [['orgs', 'list', 'extra'], /orgs list takes --json/],
      [['orgs', 'create', '--nmae', 'Typo'], /orgs create needs --name/],
    ] as const;
    // Side by side: each is a process of its own that changes nothing.
    const answers = await Promise.all(mistakes.map(([args]) => runCli([...args], env)));
    for (const [i, [args, said]] of mistakes.entries()) {
      expect([args, answers[i].code, answers[i].stdout]).toEqual([args, 2, '']);
      expect(answers[i].stderr).toMatch(said);
    }
    // Neither the plan changed nor the key was revoked.
    const after = await runCli(['orgs', 'list', '--json'], env);
    const now = after.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((o) => o.org_id === org.org_id);
    expect(now).toMatchObject({ plan: 'business', live_keys: 1 });
  }, 300_000);
});

describe('the CLI, when the read models lag behind its write', () => {
  /** Whether an event holds the hash of `key`: the key was created (only its SHA-256 is kept). */
  async function created(key: string): Promise<boolean> {
    const client = new pg.Client({ connectionString: setup.env.DATABASE_URL });
    await client.connect();
    try {
      const hash = createHash('sha256').update(key).digest('hex');
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM events WHERE data::text LIKE '%' || $1 || '%'`,
        [hash],
      );
      return rows[0].n === 1;
    } finally {
      await client.end();
    }
  }

  it('still prints the keys it created, shown only this once, and says they are usable once the read models catch up', async () => {
    // A wait for the read models that always runs out.
    const env = { ...setup.env, PROJECTION_WAIT_MS: '1' };
    const org = await runCli(['orgs', 'create', '--name', 'Lagging', '--json'], env);
    expect(org.code, org.stderr).toBe(0);
    const { live_key, test_key } = JSON.parse(org.stdout);
    expect(await created(live_key)).toBe(true);
    expect(await created(test_key)).toBe(true);

    // A key for an organization the read models know: the one just made may not be known yet (what the wait is
    // for), and `keys create` looks its organization up first.
    const known = await createOrgWithCli(setup.env, 'Known');
    const key = await runCli(['keys', 'create', '--org', known.org_id], env);
    expect(key.code, key.stderr).toBe(0);
    const printed = /: (pk_live_\w+)$/m.exec(key.stdout)?.[1];
    expect(printed, key.stdout).toBeDefined();
    expect(await created(printed!)).toBe(true);
    expect(key.stdout).toContain('usable once the read models have caught up');
  }, 300_000);
});
