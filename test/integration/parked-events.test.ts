import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../bin/cli/commands.ts';
import { migrate } from '../../platform/db/migrations.ts';
import { applyCheckpointed, checkpointMigrations } from '../../platform/eventstore/checkpoints.ts';
import { listParked, parkedEventsMigrations } from '../../platform/eventstore/parked-events.ts';
import { PostgresEventStore } from '../../platform/eventstore/postgres/store.ts';
import { START } from '../../platform/eventstore/types.ts';
import { createLogger } from '../../platform/logger.ts';
import { LogConsumer } from '../../processes/log-consumer.ts';
import type { Projection } from '../../projections/projection.ts';
import { ProjectionRunner, readCheckpoint } from '../../projections/runner.ts';
import { openTestDatabase } from '../support/databases.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

const log = createLogger('silent');
const meta = { orgId: 'org_1', mode: 'test' as const, actor: 'test' };

describe('an event a projection cannot apply (PostgreSQL, the service as it runs)', () => {
  const svc = useTestService();
  const send = async (org: TestOrg, subject: string) => {
    const sent = await org.test.post('/v1/emails', {
      from: 'a@example.com',
      to: 'x@example.com',
      subject,
      text: 'hi',
    });
    expect(sent.status).toBe(200);
    return sent.body.id as string;
  };

  it('is parked: the other projections and another organization go on, and readiness reports it', async () => {
    const a = await svc.createOrg('pro');
    const b = await svc.createOrg('pro');
    const sent = await send(a, 'fine');
    const { store } = svc.postline.services;
    const [queued] = await store.readStream(`email-${sent}`);
    // As if an entrance had let it through: the emails read model cannot hold a lone surrogate.
    const poisonId = `${sent}x`;
    const { position: poisoned } = await store.append(
      `email-${poisonId}`,
      [
        {
          type: 'EmailQueued',
          data: { ...(queued.data as object), emailId: poisonId, subject: '\ud800' },
          metadata: queued.metadata,
        },
      ],
      { expectedRevision: 'no_stream' },
    );
    // Its stream's next event waits behind it.
    await store.append(
      `email-${poisonId}`,
      [
        {
          type: 'EmailCanceled',
          data: { emailId: poisonId, canceledAt: new Date().toISOString() },
          metadata: queued.metadata,
        },
      ],
      { expectedRevision: 0 },
    );
    await svc.postline.services.readYourWrites.waitFor(['emails'], poisoned);

    // Every read model goes on, for the other organization and for the same one.
    const other = await send(b, 's');
    expect((await b.test.get(`/v1/emails/${other}`)).body.subject).toBe('s');
    const key = await a.live.post('/v1/api-keys', { name: 'after the poison' });
    expect(key.status).toBe(201);
    expect((await a.live.get('/v1/api-keys?limit=100')).body.data.map((k: any) => k.id)).toContain(
      key.body.id,
    );
    // Each write below answers only once its read model has it (read-your-writes, within its deadline).
    const domain = await b.live.post('/v1/domains', { name: 'b-after-poison.example.com' });
    expect(domain.status).toBe(201);
    expect((await b.live.get(`/v1/domains/${domain.body.id}`)).body.name).toBe('b-after-poison.example.com');
    const template = await b.live.post('/v1/templates', { name: 'After', subject: 'Hi', html: '<p>Hi</p>' });
    expect(template.status).toBe(201);
    expect((await b.live.get(`/v1/templates/${template.body.id}`)).body.name).toBe('After');
    const suppression = await b.live.post('/v1/suppressions', { email: 'after@example.com' });
    expect(suppression.status).toBe(201);
    expect((await b.live.get('/v1/suppressions')).body.data.map((s: any) => s.email)).toContain(
      'after@example.com',
    );
    const webhook = await b.live.post('/v1/webhooks', {
      url: 'https://example.com/hook',
      events: ['email.sent'],
    });
    expect(webhook.status).toBe(201);
    expect((await b.live.get(`/v1/webhooks/${webhook.body.id}`)).body.url).toBe('https://example.com/hook');
    expect((await a.test.get(`/v1/emails/${poisonId}`)).status).toBe(404);

    const parked = await listParked(svc.postline.services.db);
    expect(parked.map((p) => [p.consumer, p.stream, p.type])).toEqual([
      ['projection:emails', `email-${poisonId}`, 'EmailQueued'],
      ['projection:emails', `email-${poisonId}`, 'EmailCanceled'],
    ]);
    expect(parked[0].error).toMatch(/^22P02: /);

    // Reported, and the process goes on serving: every replica would be as stuck as this one.
    const ready = await svc.client().get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: 'ready',
      stuck_consumers: [{ consumer: 'projection:emails', parked_events: 2, since: expect.any(String) }],
    });
    const metrics = await svc.client().get('/metrics');
    expect(metrics.body).toContain('postline_parked_events{consumer="projection:emails"} 2');

    const out = new PassThrough();
    const code = await runCommand(['projections', 'status'], svc.postline, out);
    const text = out.read().toString();
    expect(code).toBe(1);
    expect(text).toContain(`projection:emails  email-${poisonId}@${poisoned}  EmailQueued  attempts 1`);
    expect(text).not.toContain('\ud800');

    // An operator's way out, once understood: the event is dropped from the read model's concerns.
    await svc.postline.services.db.query('DELETE FROM parked_events');
    expect((await svc.client().get('/readyz')).body).toEqual({ status: 'ready' });
  });
});

describe('parked events', () => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>['db'];
  let dispose: () => Promise<void>;
  let store: PostgresEventStore;
  beforeAll(async () => {
    ({ db, dispose } = await openTestDatabase());
    store = await PostgresEventStore.create(db, { pollMs: 50 });
    await db.exec(`CREATE TABLE seen (stream_id text, revision int, PRIMARY KEY (stream_id, revision));`);
    await migrate(db, [...checkpointMigrations, ...parkedEventsMigrations]);
  });
  afterAll(async () => {
    await store.close();
    await dispose();
  });

  /** Fails on events marked `poison` while `broken` holds; records what it applied. */
  let broken = true;
  const apply = async (
    tx: { query: typeof db.query },
    event: { streamId: string; revision: number; data: any },
  ) => {
    if (broken && event.data.poison) throw new TypeError('cannot read the poison');
    await tx.query('INSERT INTO seen VALUES ($1, $2) ON CONFLICT DO NOTHING', [
      event.streamId,
      event.revision,
    ]);
  };
  const seen = async () =>
    (await db.query<{ s: string }>(`SELECT stream_id || '@' || revision AS s FROM seen ORDER BY 1`)).rows.map(
      (r) => r.s,
    );
  const parkedOf = async (consumer: string) =>
    (await listParked(db))
      .filter((p) => p.consumer === consumer)
      .map((p) => `${p.stream}:${p.type}:${p.attempts}`);
  // A parked stream is due when its row in the due queue is (parked-retries.ts); a claim compares the due time
  // with the process's clock, to the millisecond, so the row is made due a second ago.
  const makeDue = () => db.query(`UPDATE parked_streams SET due_at = now() - interval '1 second'`);

  it('a projection parks the event, retries it with back-off, and applies its stream in order once it can', async () => {
    broken = true;
    const projection: Projection = { name: `p_pg`, tables: ['seen'], apply };
    await store.append(
      'p-1',
      [
        { type: 'A', data: {}, metadata: meta },
        { type: 'B', data: { poison: true }, metadata: meta },
        { type: 'C', data: {}, metadata: meta },
      ],
      { expectedRevision: 'no_stream' },
    );
    const { position: head } = await store.append('p-2', [{ type: 'A', data: {}, metadata: meta }], {
      expectedRevision: 'no_stream',
    });
    const runner = new ProjectionRunner(db, store, [projection], log);
    runner.start();
    await runner.caughtUp();
    expect(await readCheckpoint(db, projection.name)).toBe(head);
    expect(await seen()).toEqual(['p-1@0', 'p-2@0']);
    expect(await parkedOf(`projection:p_pg`)).toEqual(['p-1:B:1', 'p-1:C:1']);

    // Not due yet: nothing is tried.
    expect(await runner.retryParked()).toBe(0);
    expect(await parkedOf(`projection:p_pg`)).toEqual(['p-1:B:1', 'p-1:C:1']);
    // Due, still failing: one more attempt, and the next one further away.
    await makeDue();
    expect(await runner.retryParked()).toBe(0);
    expect(await parkedOf(`projection:p_pg`)).toEqual(['p-1:B:2', 'p-1:C:2']);
    const [{ wait }] = (
      await db.query<{ wait: number }>(
        `SELECT extract(epoch FROM next_attempt_at - now())::float AS wait FROM parked_events WHERE stream = 'p-1' LIMIT 1`,
      )
    ).rows;
    expect(wait).toBeGreaterThan(5);
    expect(wait).toBeLessThanOrEqual(10);

    // A later event of the parked stream waits behind it too.
    await store.append('p-1', [{ type: 'D', data: {}, metadata: meta }], { expectedRevision: 2 });
    await runner.caughtUp();
    expect(await parkedOf(`projection:p_pg`)).toEqual(['p-1:B:2', 'p-1:C:2', 'p-1:D:1']);

    broken = false;
    await makeDue();
    expect(await runner.retryParked()).toBe(3);
    expect(await seen()).toEqual(['p-1@0', 'p-1@1', 'p-1@2', 'p-1@3', 'p-2@0']);
    expect(await parkedOf(`projection:p_pg`)).toEqual([]);
    await runner.stop();
  });

  it('a process manager parks the event and goes on with the rest of its batch', async () => {
    broken = true;
    await db.query('DELETE FROM seen');
    const consumer = new LogConsumer({ name: `pm_pg`, db, store, log }, async (tx, events) => {
      for (const e of events) if (e.streamId.startsWith('q-')) await apply(tx, e);
    });
    await store.append('q-1', [{ type: 'X', data: { poison: true }, metadata: meta }], {
      expectedRevision: 'no_stream',
    });
    await store.append('q-2', [{ type: 'Y', data: {}, metadata: meta }], { expectedRevision: 'no_stream' });
    await consumer.catchUp();
    expect((await seen()).filter((s) => s.startsWith('q-'))).toEqual(['q-2@0']);
    expect(await parkedOf(`process:pm_pg`)).toEqual(['q-1:X:1']);
    broken = false;
    await makeDue();
    expect(await consumer.retryParked()).toBe(1);
    expect((await seen()).filter((s) => s.startsWith('q-'))).toEqual(['q-1@0', 'q-2@0']);
  });

  it('a parked stream is retried through its due row: claimed, due later on failure, removed on success', async () => {
    broken = true;
    const consumerName = `due_pg`;
    const consumer = `process:${consumerName}`;
    const claims: { claimed: boolean; token: boolean }[] = [];
    const pm = new LogConsumer({ name: consumerName, db, store, log }, async (tx, events) => {
      for (const e of events) {
        if (!e.streamId.startsWith('s-')) continue;
        const { rows } = await tx.query<{ claimed: boolean; token: boolean }>(
          `SELECT claimed_until > now() AS claimed, claim_token IS NOT NULL AS token FROM parked_streams
           WHERE consumer = $1 AND stream = $2`,
          [consumer, e.streamId],
        );
        if (rows[0]) claims.push(rows[0]);
        await apply(tx, e);
      }
    });
    const dueRow = async () =>
      (
        await db.query<{ wait: number; claimed: boolean; token: boolean }>(
          `SELECT extract(epoch FROM due_at - now())::float AS wait, claimed_until IS NOT NULL AS claimed,
             claim_token IS NOT NULL AS token
           FROM parked_streams WHERE consumer = $1 AND stream = 's-1'`,
          [consumer],
        )
      ).rows;
    await store.append(
      's-1',
      [
        { type: 'X', data: { poison: true }, metadata: meta },
        { type: 'Y', data: {}, metadata: meta },
      ],
      { expectedRevision: 'no_stream' },
    );
    await pm.catchUp();
    expect(await parkedOf(consumer)).toEqual(['s-1:X:1', 's-1:Y:1']);
    // One due row for the stream, due at its first retry (5 s), claimed by nobody.
    const [parked] = await dueRow();
    expect(parked).toMatchObject({ claimed: false, token: false });
    expect(parked.wait).toBeGreaterThan(0);
    expect(parked.wait).toBeLessThanOrEqual(5);
    expect(await pm.retryParked()).toBe(0);
    expect(claims).toEqual([]);

    // Due, still failing: the claim held the row while it was tried; then it is due after the back-off (10 s).
    await makeDue();
    expect(await pm.retryParked()).toBe(0);
    expect(claims).toEqual([{ claimed: true, token: true }]);
    const [later] = await dueRow();
    expect(later).toMatchObject({ claimed: false, token: false });
    expect(later.wait).toBeGreaterThan(5);
    expect(later.wait).toBeLessThanOrEqual(10);
    expect(await parkedOf(consumer)).toEqual(['s-1:X:2', 's-1:Y:2']);

    // Applied: the events and the due row are gone.
    broken = false;
    await makeDue();
    expect(await pm.retryParked()).toBe(2);
    expect((await seen()).filter((x) => x.startsWith('s-'))).toEqual(['s-1@0', 's-1@1']);
    expect(await parkedOf(consumer)).toEqual([]);
    expect(await dueRow()).toEqual([]);

    // A due row whose events an operator removed is removed once due.
    broken = true;
    await store.append('s-2', [{ type: 'X', data: { poison: true }, metadata: meta }], {
      expectedRevision: 'no_stream',
    });
    await pm.catchUp();
    await db.query('DELETE FROM parked_events WHERE consumer = $1', [consumer]);
    await makeDue();
    expect(await pm.retryParked()).toBe(0);
    expect((await db.query('SELECT 1 FROM parked_streams WHERE consumer = $1', [consumer])).rows).toEqual([]);
    broken = false;
  });

  it('a batch that waited for the checkpoint row sees the stream its holder parked meanwhile', async () => {
    // Two processes run one process manager: no advisory lock, the checkpoint row (FOR UPDATE) keeps them apart.
    const checkpoint = { table: 'process_checkpoints' as const, name: 'two_pg' };
    await db.query(`INSERT INTO process_checkpoints (name, position) VALUES ($1, $2)`, [
      checkpoint.name,
      START,
    ]);
    await store.append(
      't-1',
      [
        { type: 'X', data: {}, metadata: meta },
        { type: 'Y', data: {}, metadata: meta },
      ],
      { expectedRevision: 'no_stream' },
    );
    const [first, second] = await store.readStream('t-1');
    // Process A: its batch [first] failed whole; the event-by-event pass parks it, and A has not committed yet.
    let commitA!: () => void;
    const held = new Promise<void>((resolve) => {
      commitA = resolve;
    });
    let parkedByA!: () => void;
    const parked = new Promise<void>((resolve) => {
      parkedByA = resolve;
    });
    const a = db.transaction(async (tx) => {
      const failing = async () => {
        throw new TypeError('cannot read it');
      };
      await applyCheckpointed(tx, checkpoint, [first], failing, { oneByOne: log });
      parkedByA();
      await held;
    });
    await parked;
    // Process B read [first, second] from the same checkpoint: it waits for A's checkpoint row.
    const applied: number[] = [];
    const b = db.transaction((tx) =>
      applyCheckpointed(tx, checkpoint, [first, second], async (_tx, events) => {
        applied.push(...events.map((e) => e.revision));
      }),
    );
    await expect
      .poll(async () => {
        const { rows } = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%two_pg%'`,
        );
        return rows[0].n;
      })
      .toBe(1);
    commitA();
    await a;
    expect(await b).toBe(second.position);
    // The second event waits behind the first, parked: never applied before it.
    expect(applied).toEqual([]);
    expect(await parkedOf(`process:${checkpoint.name}`)).toEqual(['t-1:X:1', 't-1:Y:1']);
  });

  it('does not park anything when the database itself fails: the batch is retried whole', async () => {
    const consumer = new LogConsumer({ name: `flaky_pg`, db, store, log }, async () => {
      // As the server would answer when it shuts down (57P01 admin_shutdown).
      throw Object.assign(new Error('terminating connection due to administrator command'), {
        code: '57P01',
      });
    });
    await store.append('r-1', [{ type: 'Z', data: {}, metadata: meta }], { expectedRevision: 'no_stream' });
    await expect(consumer.catchUp(500)).rejects.toThrow(/administrator command/);
    expect(await parkedOf(`process:flaky_pg`)).toEqual([]);
  });
});

describe('parked events migrated to due rows', () => {
  it('gives every parked stream its due row, due at the earliest next attempt of its events', async () => {
    const { db, dispose } = await openTestDatabase();
    try {
      await migrate(db, [parkedEventsMigrations[0]]);
      await db.query(
        `INSERT INTO parked_events (consumer, position, stream, type, event, error, next_attempt_at) VALUES
           ('projection:a', '1', 's-1', 'A', '{}', 'e', '2026-01-01T00:00:10Z'),
           ('projection:a', '2', 's-1', 'B', '{}', 'e', '2026-01-01T00:00:05Z'),
           ('projection:a', '3', 's-2', 'A', '{}', 'e', '2026-01-01T00:01:00Z'),
           ('process:b', '1', 's-1', 'A', '{}', 'e', '2026-01-01T00:02:00Z')`,
      );
      await migrate(db, parkedEventsMigrations);
      const { rows } = await db.query<{ row: string }>(
        `SELECT consumer || ' ' || stream || ' ' || to_char(due_at AT TIME ZONE 'UTC', 'HH24:MI:SS')
           || ' ' || (claimed_until IS NULL) AS row
         FROM parked_streams ORDER BY consumer, stream`,
      );
      expect(rows.map((r) => r.row)).toEqual([
        'process:b s-1 00:02:00 true',
        'projection:a s-1 00:00:05 true',
        'projection:a s-2 00:01:00 true',
      ]);
    } finally {
      await dispose();
    }
  });
});
