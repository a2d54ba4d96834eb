import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { Position } from '../../platform/eventstore/types.ts';
import { expandBroadcast } from '../../processes/broadcasts/broadcast-step.ts';
import { ContactImportProcess } from '../../processes/contact-import/contact-import.process.ts';
import { PATIENCE } from '../support/patience.ts';
import { useTwoOrgs } from '../support/service.ts';

const { svc, orgs } = useTwoOrgs({ env: { BROADCAST_EXPANSION_BATCH: '3000' } });

/** The broadcast's emails in the log, and in the `emails` read model. */
async function counts(broadcastId: string) {
  const { rows } = await svc.postline.services.db.query<{ logged: number; projected: number }>(
    `SELECT (SELECT count(*)::int FROM events WHERE type = 'EmailQueued' AND data->'broadcast'->>'broadcastId' = $1) AS logged,
            (SELECT count(*)::int FROM emails WHERE broadcast_id = $1) AS projected`,
    [broadcastId],
  );
  return rows[0];
}

describe('broadcast expansion beside transactional sends', () => {
  it('runs at most 2,000 emails of a page ahead of the emails read model, and goes on once it catches up', async () => {
    const client = orgs.acme.test;
    const services = svc.postline.services;
    const audience = (await client.post('/v1/audiences', { name: 'Many' })).body.id as string;
    const rows = Array.from({ length: 2500 }, (_, i) => `reader${i}@example.org,Reader${i}`);
    const upload = await client.post(
      `/v1/audiences/${audience}/contacts/import`,
      ['email,first_name', ...rows].join('\n'),
      { 'content-type': 'text/csv' },
    );
    expect(upload.status, JSON.stringify(upload.body)).toBe(202);
    await new ContactImportProcess(services).runOnce();
    await services.readYourWrites.waitFor(
      ['contacts'],
      await services.store.headPosition({ committed: true }),
    );
    const b = await client.post('/v1/broadcasts', {
      name: 'Many',
      from: 'Acme <news@acme.test>',
      subject: 'Hello {{contact.first_name}}',
      text: 'Hi {{contact.first_name}}',
      audience_id: audience,
    });
    expect(b.status, JSON.stringify(b.body)).toBe(201);
    expect((await client.post(`/v1/broadcasts/${b.body.id}/send`, {})).status).toBe(200);

    // The emails read model is held: its runner cannot write a row until the lock goes.
    const holder = new pg.Client({ connectionString: services.config.DATABASE_URL });
    await holder.connect();
    const waits: Position[] = [];
    const waitFor = services.readYourWrites.waitFor.bind(services.readYourWrites);
    services.readYourWrites.waitFor = (names, position) => {
      if (position) waits.push(position);
      return waitFor(names, position);
    };
    try {
      await holder.query('BEGIN; LOCK TABLE emails IN SHARE MODE');
      const expanding = expandBroadcast(services, b.body.id);
      // 40 slices of 50 are in the log; the 41st waits for the first to be readable.
      await expect
        .poll(async () => ({ waiting: waits.length > 0, ...(await counts(b.body.id)) }), PATIENCE)
        .toEqual({ waiting: true, logged: 2000, projected: 0 });
      await holder.query('COMMIT');
      expect(await expanding).toEqual({ queued: 2500, next: null });
      await expect.poll(() => counts(b.body.id), PATIENCE).toEqual({ logged: 2500, projected: 2500 });
    } finally {
      services.readYourWrites.waitFor = waitFor;
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
    }
  });
});
