import { expect, it } from 'vitest';
import { migrations } from '../../bin/composition.ts';
import { migrate } from '../../platform/db/migrations.ts';
import { getEmail } from '../../read-side/emails/queries.ts';
import { openTestDatabase } from '../support/databases.ts';

/** A fresh database with the migrations before `id` applied. */
async function migratedBefore(id: string) {
  const opened = await openTestDatabase('postgres');
  const upTo = migrations.findIndex((m) => m.id === id);
  expect(upTo).toBeGreaterThan(0);
  await migrate(opened.db, migrations.slice(0, upTo));
  return opened;
}

it('emails-003 moves each recipient row into its email, so an existing email reads as before', async () => {
  const { db, dispose } = await migratedBefore('emails-003');
  try {
    await db.exec(`
      INSERT INTO emails (id, org_id, mode, status, lifecycle, from_address, to_addresses, cc_addresses,
        bcc_addresses, reply_to, subject, headers, tags, domain_name, suppressed_recipients, created_at,
        last_event, last_event_at)
      VALUES ('em_1', 'org_1', 'live', 'sent', 'sent', 'a@acme.test', '["b@rcpt.test"]', '["c@rcpt.test"]', '[]',
        '[]', 'Hi', '{}', '{}', 'acme.test', '[]', '2026-11-01T10:00:00Z', 'EmailDeliveryDelayed',
        '2026-11-01T10:00:02Z');
      INSERT INTO email_recipients (email_id, address, org_id, mode, status, attempts, smtp_code, smtp_response,
        next_attempt_at, updated_at)
      VALUES ('em_1', 'c@rcpt.test', 'org_1', 'live', 'delayed', 1, 451, '451 later', '2026-11-01T10:05:00Z',
          '2026-11-01T10:00:02Z'),
        ('em_1', 'b@rcpt.test', 'org_1', 'live', 'delivered', 0, NULL, '250 ok', NULL, '2026-11-01T10:00:01.5Z');`);
    await migrate(db, migrations);
    const email = await getEmail(db, { orgId: 'org_1', mode: 'live' }, 'em_1');
    expect(email?.recipients).toEqual([
      {
        email: 'b@rcpt.test',
        status: 'delivered',
        attempts: 0,
        smtp_code: null,
        smtp_response: '250 ok',
        bounce_type: null,
        next_attempt_at: null,
        updated_at: '2026-11-01T10:00:01.500Z',
      },
      {
        email: 'c@rcpt.test',
        status: 'delayed',
        attempts: 1,
        smtp_code: 451,
        smtp_response: '451 later',
        bounce_type: null,
        next_attempt_at: '2026-11-01T10:05:00.000Z',
        updated_at: '2026-11-01T10:00:02.000Z',
      },
    ]);
    const left = await db.query(`SELECT to_regclass('email_recipients') AS t`);
    expect(left.rows[0].t).toBeNull();
  } finally {
    await dispose();
  }
});

it('emails-004 turns the columns read back whole into json, so an existing email reads as before', async () => {
  const { db, dispose } = await migratedBefore('emails-004');
  try {
    await db.exec(`
      INSERT INTO emails (id, org_id, mode, status, lifecycle, from_address, to_addresses, cc_addresses,
        bcc_addresses, reply_to, subject, headers, tags, domain_name, suppressed_recipients, created_at,
        last_event, last_event_at, recipients)
      VALUES ('em_1', 'org_1', 'live', 'queued', 'queued', 'a@acme.test', '["b@rcpt.test"]', '["c@rcpt.test"]',
        '["d@rcpt.test"]', '["Reply <r@acme.test>"]', 'Hi', '{"X-A": "1"}', '{t1}', 'acme.test',
        '["s@rcpt.test"]', '2026-11-01T10:00:00Z', 'EmailQueued', '2026-11-01T10:00:00Z', '[]')`);
    const before = await getEmail(db, { orgId: 'org_1', mode: 'live' }, 'em_1');
    await migrate(db, migrations);
    const types = await db.query<{ column_name: string; data_type: string }>(
      `SELECT column_name, data_type FROM information_schema.columns
       WHERE table_name = 'emails' AND column_name IN ('to_addresses', 'cc_addresses', 'bcc_addresses', 'reply_to',
         'headers', 'suppressed_recipients', 'recipients') ORDER BY column_name`,
    );
    expect(types.rows.map((r) => `${r.column_name} ${r.data_type}`)).toEqual([
      'bcc_addresses json',
      'cc_addresses json',
      'headers json',
      'recipients jsonb',
      'reply_to json',
      'suppressed_recipients json',
      'to_addresses json',
    ]);
    const after = await getEmail(db, { orgId: 'org_1', mode: 'live' }, 'em_1');
    expect(after).toEqual(before);
    expect(after).toMatchObject({
      to: ['b@rcpt.test'],
      cc: ['c@rcpt.test'],
      bcc: ['d@rcpt.test'],
      reply_to: ['Reply <r@acme.test>'],
      headers: { 'X-A': '1' },
    });
  } finally {
    await dispose();
  }
});
