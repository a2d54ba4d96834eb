import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPostgres, type Database } from '../../platform/db/database.ts';
import { migrate } from '../../platform/db/migrations.ts';
import { webhookProcessMigrations } from '../../processes/webhooks/schema.ts';
import { createTestDatabaseUrl } from '../support/databases.ts';

let db: Database;
let drop: () => Promise<void>;

beforeAll(async () => {
  const created = await createTestDatabaseUrl();
  drop = created.drop;
  db = connectPostgres(created.url);
});
afterAll(async () => {
  await db?.close();
  await drop?.();
});

const insert = (id: string, sourceKey: string) =>
  db.query(
    `INSERT INTO webhook_deliveries (id, webhook_id, org_id, mode, source_key, event_type, body, status,
       next_attempt_at, created_at, updated_at)
     VALUES ($1, 'wh_1', 'org_1', 'live', $2, 'email.sent', '{}', 'succeeded', now(), now(), now())`,
    [id, sourceKey],
  );

describe('webhook process schema, upgraded', () => {
  it('keeps the ids of deliveries recorded before ids were derived, and drops the unique source index', async () => {
    await migrate(db, webhookProcessMigrations.slice(0, 2));
    await insert('whl_01legacy0000000000000000', 'email-em_1@1');
    await expect(insert('whl_01legacy0000000000000001', 'email-em_1@1')).rejects.toThrow(/unique/);

    await migrate(db, webhookProcessMigrations.slice(0, 3));
    const { rows } = await db.query('SELECT webhook_id, source_key, id FROM webhook_legacy_delivery_ids');
    expect(rows).toEqual([
      { webhook_id: 'wh_1', source_key: 'email-em_1@1', id: 'whl_01legacy0000000000000000' },
    ]);
    // One delivery per (webhook, event) is now the derived id's job (primary key), not an index's.
    await insert('whl_01legacy0000000000000001', 'email-em_1@1');
    await expect(insert('whl_01legacy0000000000000001', 'email-em_1@2')).rejects.toThrow(/duplicate key/);
    const { rows: first } = await db.query(
      'SELECT first_latency_ms, first_response_excerpt FROM webhook_deliveries ORDER BY id LIMIT 1',
    );
    expect(first).toEqual([{ first_latency_ms: null, first_response_excerpt: null }]);
  });

  it('keeps the checkpoint of a database upgraded to deliveries written with their outcome, as sent up to there', async () => {
    await db.query(`UPDATE webhook_fanout_checkpoints SET position = '00000000000000000042'`);
    // As 003 left databases upgraded before 004 came: with the one-parameter success function.
    await db.query(
      `CREATE FUNCTION webhook_record_successes(successes json) RETURNS void LANGUAGE sql AS 'SELECT'`,
    );
    await migrate(db, webhookProcessMigrations);
    const { rows } = await db.query('SELECT position, sent_up_to, owner FROM webhook_fanout_checkpoints');
    expect(rows).toEqual([
      { position: '00000000000000000042', sent_up_to: '00000000000000000042', owner: null },
    ]);
    const { rows: functions } = await db.query(
      `SELECT pg_get_function_identity_arguments(oid) AS args FROM pg_proc WHERE proname = 'webhook_record_successes'`,
    );
    expect(functions).toEqual([{ args: 'successes json, bodies text' }]);
    // Successes of deliveries with a row and of deliveries without one, by the function that replaced 003's.
    await db.query(
      `UPDATE webhook_deliveries SET status = 'pending', claim_token = 'tok' WHERE id = 'whl_01legacy0000000000000001'`,
    );
    const at = Date.parse('2026-01-02T03:04:05.678Z');
    await db.query('SELECT webhook_record_successes($1::json, $2)', [
      JSON.stringify([
        {
          id: 'whl_01legacy0000000000000001',
          webhook: 'wh_1',
          token: 'tok',
          attempt: 1,
          at,
          status: 204,
          latency: 3,
        },
        {
          id: 'whl_01new00000000000000000000',
          webhook: 'wh_1',
          token: null,
          attempt: 1,
          at,
          status: 200,
          latency: 5,
          excerpt: 'ok',
          org: 'org_1',
          mode: 'live',
          source: 'email-em_2@1',
          type: 'email.sent',
          created: at - 1000,
        },
      ]),
      ['', '{"type":"email.sent"}'].join('\u001e'),
    ]);
    const { rows: done } = await db.query(
      `SELECT id, status, attempts, claim_token, body, completed_at, created_at, first_latency_ms
       FROM webhook_deliveries WHERE id IN ('whl_01legacy0000000000000001', 'whl_01new00000000000000000000') ORDER BY id`,
    );
    expect(done).toEqual([
      {
        id: 'whl_01legacy0000000000000001',
        status: 'succeeded',
        attempts: 1,
        claim_token: null,
        body: '{}',
        completed_at: new Date(at),
        created_at: expect.any(Date),
        first_latency_ms: 3,
      },
      {
        id: 'whl_01new00000000000000000000',
        status: 'succeeded',
        attempts: 1,
        claim_token: null,
        body: '{"type":"email.sent"}',
        completed_at: new Date(at),
        created_at: new Date(at - 1000),
        first_latency_ms: 5,
      },
    ]);
  });
});
