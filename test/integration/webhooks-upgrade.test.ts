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

    await migrate(db, webhookProcessMigrations);
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
});
