import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PATIENCE } from '../support/patience.ts';
import { createOrgWithCli, freePort, runCli, startServer, useServiceEnv } from '../support/process.ts';
import { apiClient } from '../support/service.ts';

/** `postline contacts import` as an operator runs it: a file on disk, next to a running service. */
const setup = useServiceEnv();

describe('postline contacts import', () => {
  it('imports a CSV file into an audience, showing progress and the skipped rows; refuses mistakes', async () => {
    const org = await createOrgWithCli(setup.env, 'Importer');
    const dir = setup.env.POSTLINE_DATA_DIR;
    const good = join(dir, 'contacts.csv');
    writeFileSync(
      good,
      '\uFEFFEmail,first_name,company\r\nann@example.org,Ann,"Acme, Inc."\r\nnot-an-address,Bob,\r\nann@example.org,Again,\r\ncid@example.org,,\r\n',
    );
    const noEmail = join(dir, 'no-email.csv');
    writeFileSync(noEmail, 'name\nAnn\n');

    // Mistakes: exit code 1 with the reason, 2 for bad arguments.
    const missing = await runCli(
      ['contacts', 'import', join(dir, 'nope.csv'), '--org', org.org_id],
      setup.env,
    );
    expect([missing.code, missing.stdout], missing.stderr).toEqual([
      1,
      expect.stringContaining('cannot be read'),
    ]);
    expect((await runCli(['contacts', 'import', good, '--org', 'org_nope'], setup.env)).code).toBe(1);
    const header = await runCli(['contacts', 'import', noEmail, '--org', org.org_id], setup.env);
    expect([header.code, header.stdout]).toEqual([1, expect.stringContaining('no `email` column')]);
    const audienceGone = await runCli(
      ['contacts', 'import', good, '--org', org.org_id, '--audience', 'aud_01unknown'],
      setup.env,
    );
    expect([audienceGone.code, audienceGone.stdout]).toEqual([1, expect.stringContaining('not found')]);
    expect(
      (await runCli(['contacts', 'import', good, '--org', org.org_id, '--mode', 'prod'], setup.env)).code,
    ).toBe(2);
    expect((await runCli(['contacts', 'import', '--org', org.org_id], setup.env)).code).toBe(2);

    const port = await freePort();
    const env = { ...setup.env, PORT: String(port) };
    const api = apiClient(`http://127.0.0.1:${port}`, org.live_key);
    const server = await startServer(env);
    try {
      const audience = (await api.post('/v1/audiences', { name: 'Imported' })).body.id;
      const run = await runCli(
        ['contacts', 'import', good, '--org', org.org_id, '--audience', audience],
        env,
      );
      expect(run.code, run.stdout + run.stderr).toBe(0);
      // Not a terminal: the progress bar prints plain lines.
      expect(run.stdout).toMatch(/^import \[#+\] 100% 4\/4 rows$/m);
      expect(run.stdout).toContain('4 rows, 2 created, 0 updated, 2 skipped.');
      expect(run.stdout).toContain('  line 3: email: must be a valid email address');
      expect(run.stdout).toContain('  line 4: email: repeats the address of line 2');
      await expect
        .poll(
          async () =>
            (await api.get(`/v1/contacts?audience_id=${audience}`)).body.data.map((c: any) => c.email).sort(),
          PATIENCE,
        )
        .toEqual(['ann@example.org', 'cid@example.org']);
      const ann = (await api.get('/v1/contacts?email=ann@example.org')).body.data[0];
      expect(ann).toMatchObject({ first_name: 'Ann', properties: { company: 'Acme, Inc.' } });
      // Importing again updates the same contacts: none is made twice.
      const again = await runCli(
        ['contacts', 'import', good, '--org', org.org_id, '--audience', audience],
        env,
      );
      expect(again.stdout).toContain('4 rows, 0 created, 2 updated, 2 skipped.');
    } finally {
      await server.stop();
    }
  }, 300_000);
});
