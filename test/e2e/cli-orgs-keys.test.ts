import { describe, expect, it } from 'vitest';
import { createOrgWithCli, runCli, useServiceEnv } from '../support/process.ts';

const setup = useServiceEnv();

describe('the CLI on organizations and keys', () => {
  it('says a failure on standard error, with exit code 1 and nothing on standard output (its --json neither)', async () => {
    const org = await createOrgWithCli(setup.env, 'Acme');
    const failures = [
      [['keys', 'create', '--org', 'org_nope', '--json'], /No organization org_nope/],
      [['orgs', 'set-plan', 'org_nope', 'pro'], /No organization org_nope/],
      [['orgs', 'set-client-details', 'org_nope', 'on'], /No organization org_nope/],
      [['keys', 'revoke', 'key_nope'], /No API key key_nope/],
    ] as const;
    const answers = await Promise.all(failures.map(([args]) => runCli([...args], setup.env)));
    for (const [i, [args, said]] of failures.entries()) {
      expect([args, answers[i].code, answers[i].stdout]).toEqual([args, 1, '']);
      expect(answers[i].stderr).toMatch(said);
    }
    // The organization that exists is served as before.
    const key = await runCli(['keys', 'create', '--org', org.org_id, '--json'], setup.env);
    expect(key.code, key.stderr).toBe(0);
    expect(JSON.parse(key.stdout)).toMatchObject({ mode: 'live', permission: 'full_access' });
  }, 120_000);

  it('refuses a key name the API would refuse (over 100 characters) as a usage mistake, exit code 2', async () => {
    const org = await createOrgWithCli(setup.env, 'Names');
    const long = await runCli(['keys', 'create', '--org', org.org_id, '--name', 'k'.repeat(101)], setup.env);
    expect([long.code, long.stdout]).toEqual([2, '']);
    expect(long.stderr).toMatch(/keys create needs --org/);
    const longest = await runCli(
      ['keys', 'create', '--org', org.org_id, '--name', 'k'.repeat(100)],
      setup.env,
    );
    expect(longest.code, longest.stderr).toBe(0);
  }, 120_000);
});
