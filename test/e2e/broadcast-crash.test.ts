import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PATIENCE_MS } from '../support/patience.ts';
import { createOrgWithCli, freePort, startServer, useServiceEnv } from '../support/process.ts';
import { apiClient } from '../support/service.ts';

/**
 * A broadcast's expansion killed (SIGKILL) half-way, the service started again on the same database: once the dead
 * process's claim runs out the broadcast is resumed from its last recorded step, and every member of the audience
 * gets exactly one email.
 */

// Enough steps that the expansion is still going when the test sees its 40th contact processed and kills it: with
// 300, a fast machine expanded the rest between two looks at the progress.
const CONTACTS = 1000;
// Ten contacts a step: the kill lands between steps or inside one.
const setup = useServiceEnv({ BROADCAST_EXPANSION_BATCH: '10', RATE_LIMIT_RPS: '100000' });

describe('kill -9 during a broadcast', () => {
  it('resumes where it was and sends nobody twice', async () => {
    const port = await freePort();
    const env = { ...setup.env, PORT: String(port) };
    const first = await startServer(env);
    const org = await createOrgWithCli(setup.env, 'News', 'pro');
    const api = apiClient(`http://127.0.0.1:${port}`, org.test_key);

    const audience = (await api.post('/v1/audiences', { name: 'All' })).body.id;
    for (let i = 0; i < CONTACTS; i += 30)
      await Promise.all(
        Array.from({ length: Math.min(30, CONTACTS - i) }, (_, j) =>
          api.post('/v1/contacts', { email: `reader${i + j}@example.org`, audience_ids: [audience] }),
        ),
      );
    const broadcast = (
      await api.post('/v1/broadcasts', {
        name: 'Crash',
        audience_id: audience,
        from: 'news@example.com',
        subject: 'Hi {{contact.email}}',
        text: 'Hello',
      })
    ).body.id;
    expect((await api.post(`/v1/broadcasts/${broadcast}/send`, {})).body.status).toBe('sending');

    // Killed once some contacts, not all, have their email.
    let processed = 0;
    for (const end = Date.now() + PATIENCE_MS; processed < 40 && Date.now() < end; ) {
      processed = (await api.get(`/v1/broadcasts/${broadcast}`)).body.progress.contacts_processed;
      if (processed < 40) await new Promise((r) => setTimeout(r, 10));
    }
    first.child.kill('SIGKILL');
    if (first.child.signalCode === null) await new Promise((r) => first.child.once('exit', r));
    const atKill = (await countEmails(setup.env.DATABASE_URL, broadcast)).total;
    console.log(`killed with ${processed} contacts processed, ${atKill} emails in the log`);
    expect(atKill).toBeLessThan(CONTACTS);

    const second = await startServer(env);
    try {
      // The dead process's claim on the expansion (30 s) runs out first.
      let status = '';
      for (const end = Date.now() + 30_000 + PATIENCE_MS; status !== 'sent' && Date.now() < end; ) {
        status = (await api.get(`/v1/broadcasts/${broadcast}`)).body.status;
        if (status !== 'sent') await new Promise((r) => setTimeout(r, 100));
      }
      expect(status).toBe('sent');
      const emails = await countEmails(setup.env.DATABASE_URL, broadcast);
      expect(emails).toEqual({ total: CONTACTS, contacts: CONTACTS });
      const after = (await api.get(`/v1/broadcasts/${broadcast}`)).body;
      expect(after.progress.contacts_processed).toBe(CONTACTS);
      expect(after.counts.recipients).toBe(CONTACTS);
    } finally {
      await second.stop();
    }
  }, 300_000);
});

/** The broadcast's emails in the log: how many, and for how many different contacts. */
async function countEmails(url: string, broadcastId: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ total: number; contacts: number }>(
      `SELECT count(*)::int AS total, count(DISTINCT data->'broadcast'->>'contactId')::int AS contacts
       FROM events WHERE type = 'EmailQueued' AND data->'broadcast'->>'broadcastId' = $1`,
      [broadcastId],
    );
    return rows[0];
  } finally {
    await client.end();
  }
}
