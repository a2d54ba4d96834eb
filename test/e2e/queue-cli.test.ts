import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { PATIENCE } from '../support/patience.ts';
import { createOrgWithCli, freePort, runCli, startServer, useServiceEnv } from '../support/process.ts';
import { apiClient } from '../support/service.ts';

/**
 * `postline queue` and its controls as an operator runs them, beside a running service. The service runs the API
 * and the projections only: the jobs inserted here stand for mail waiting, which no delivery worker takes away.
 * What a retry or a give-up does to the jobs is held in test/integration/queue.test.ts.
 */
const setup = useServiceEnv({ POSTLINE_ROLES: 'api,projections' });

async function insertJobs(url: string, orgId: string) {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    await db.query(
      `INSERT INTO delivery_jobs (email_id, destination, org_id, mode, lane, queue, due_at, queued_at)
       VALUES ('em_1', 'gmail.com', $1, 'live', 'transactional', $1 || ':transactional', now() - interval '1 minute', now() - interval '5 minutes'),
              ('em_2', 'gmail.com', $1, 'live', 'transactional', $1 || ':transactional', now() + interval '1 hour', now()),
              ('em_3', 'example.org', $1, 'live', 'broadcast', $1 || ':broadcast', now(), now())`,
      [orgId],
    );
  } finally {
    await db.end();
  }
}

describe('postline queue', () => {
  it('lists waiting mail; pauses (across a restart, ending on its own), resumes, retries and bounces; refuses mistakes', async () => {
    const org = await createOrgWithCli(setup.env, 'Queue Operator');
    const env: Record<string, string> = { ...setup.env, PORT: String(await freePort()) };
    const api = apiClient(`http://127.0.0.1:${env.PORT}`, org.live_key);
    const cli = async (...args: string[]) => {
      const r = await runCli(['queue', ...args], env);
      return { ...r, out: r.stdout + r.stderr };
    };
    const pausedUntil = async (destination: string) =>
      (await api.get('/v1/queue')).body.data.find((d: any) => d.destination === destination)?.paused_until;
    await insertJobs(env.DATABASE_URL, org.org_id);

    let server = await startServer(env);
    try {
      const listed = await cli();
      expect(listed.code, listed.out).toBe(0);
      const lines = listed.stdout.trim().split('\n');
      expect(lines[0]).toMatch(
        /^ORG +MODE +DESTINATION +LANE +QUEUED +DEFERRED +HELD +IN_FLIGHT +OLDEST +PAUSED_UNTIL +LAST$/,
      );
      expect(lines[1]).toMatch(new RegExp(`^${org.org_id} +live +gmail\\.com +transactional +1 +1 +0 +0 `));
      const json = await cli('--destination', 'Example.ORG', '--json');
      expect(
        json.stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l)),
      ).toEqual([
        expect.objectContaining({
          org_id: org.org_id,
          destination: 'example.org',
          lane: 'broadcast',
          queued: 1,
        }),
      ]);

      const paused = await cli('pause', 'gmail.com', '--for', '2h', '--reason', 'Spamhaus listing');
      expect(paused.code, paused.out).toBe(0);
      expect(paused.stdout).toMatch(/Delivery to gmail\.com paused for every organization until /);
      const until = await pausedUntil('gmail.com');
      expect(Date.parse(until) - Date.now()).toBeGreaterThan(3600_000);
      expect((await cli()).stdout).toContain(
        `Paused: gmail.com for every organization until ${until} by cli (Spamhaus listing)`,
      );
    } finally {
      await server.stop();
    }

    // A pause is in the log and its read model: it holds across a restart.
    server = await startServer(env);
    try {
      expect(await pausedUntil('gmail.com')).not.toBeNull();
      const resumed = await cli('resume', 'gmail.com');
      expect([resumed.code, resumed.stdout.trim()]).toEqual([
        0,
        'Delivery to gmail.com resumed for every organization.',
      ]);
      expect(await pausedUntil('gmail.com')).toBeNull();
      expect((await cli('resume', 'gmail.com')).stdout).toContain('was not paused');

      // A pause ends on its own at its time; one organization's pause is that organization's only.
      expect((await cli('pause', 'example.org', '--for', '2s', '--org', org.org_id)).code).toBe(0);
      expect(await pausedUntil('example.org')).not.toBeNull();
      await vi.waitFor(async () => expect(await pausedUntil('example.org')).toBeNull(), PATIENCE);

      const retry = await cli('retry', 'gmail.com', '--org', org.org_id);
      expect([retry.code, retry.stdout.trim()]).toEqual([
        0,
        `The waiting mail to gmail.com for ${org.org_id} is due now.`,
      ]);
      const bounce = await cli('bounce', 'gmail.com');
      expect(bounce.code, bounce.out).toBe(0);
      expect(bounce.stdout).toContain('each recipient bounces softly');

      // Each control is an event, with its actor: an auditor sees who did what, and when.
      const history = await runCli(['streams', 'show', 'queue-all-gmail.com'], env);
      expect(history.code, history.stderr).toBe(0);
      for (const type of ['DeliveryPaused', 'DeliveryResumed', 'DeliveryGiveUpRequested'])
        expect(history.stdout).toContain(type);
      expect(history.stdout).toContain('cli');
    } finally {
      await server.stop();
    }

    // Mistakes: bad arguments are exit code 2 and say what is wrong; an unknown organization is 1.
    const badDuration = await cli('pause', 'gmail.com', '--for', 'soon');
    expect([badDuration.code, badDuration.stderr]).toEqual([
      2,
      expect.stringContaining('Not a duration: soon'),
    ]);
    const tooLong = await cli('pause', 'gmail.com', '--for', '60d');
    expect([tooLong.code, tooLong.stderr]).toEqual([2, expect.stringContaining('within 30 days')]);
    const badDomain = await cli('pause', 'localhost');
    expect([badDomain.code, badDomain.stderr]).toEqual([2, expect.stringContaining('`destination`')]);
    expect((await cli('retry')).code).toBe(2);
    expect((await cli('bounce', 'gmail.com', '--org', 'org_nope')).code).toBe(1);
    expect((await cli('--bogus')).code).toBe(2);
  }, 300_000);
});
