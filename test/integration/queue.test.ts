import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { readCheckpoint } from '../../platform/eventstore/checkpoints.ts';
import { QueueControlsProcess } from '../../processes/delivery/queue-controls.process.ts';
import { pausedJobSql } from '../../processes/delivery/queue-view.ts';
import { deliveryPausesProjection } from '../../projections/delivery-pauses.projection.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import {
  giveUpDelivery,
  pauseDelivery,
  resumeDelivery,
  retryDelivery,
} from '../../write-side/queue/queue.commands.ts';
import { useTwoOrgs } from '../support/service.ts';

const clock = new ManualClock('2026-06-01T10:00:00Z');
const { svc, orgs } = useTwoOrgs(() => ({ clock }));
const at = (minutes: number) => new Date(clock.now().getTime() + minutes * 60_000).toISOString();
const T0 = '2026-06-01T10:00:00.000Z';

async function insertJob(j: {
  id: string;
  org: string;
  destination: string;
  lane?: string;
  mode?: string;
  due?: number;
  claimed?: number;
  queuedAt?: number;
}) {
  await svc.postline.services.db.query(
    `INSERT INTO delivery_jobs (email_id, destination, org_id, mode, lane, queue, due_at, claimed_until, queued_at)
     VALUES ($1, $2, $3, $4, $5, $3 || ':' || $5, $6, $7, $8)`,
    [
      j.id,
      j.destination,
      j.org,
      j.mode ?? 'live',
      j.lane ?? 'transactional',
      at(j.due ?? -1),
      j.claimed === undefined ? null : at(j.claimed),
      at(j.queuedAt ?? -10),
    ],
  );
}

const controls = () => svc.postline.services;
const waitForPauses = (position?: string) =>
  position && svc.postline.services.readYourWrites.waitFor(['delivery_pauses'], position);

beforeAll(async () => {
  const { acme, other } = orgs;
  await insertJob({ id: 'em_1', org: acme.orgId, destination: 'gmail.com', queuedAt: -30 });
  await insertJob({ id: 'em_2', org: acme.orgId, destination: 'gmail.com' });
  await insertJob({ id: 'em_3', org: acme.orgId, destination: 'gmail.com', due: 20 });
  await insertJob({ id: 'em_4', org: acme.orgId, destination: 'gmail.com', claimed: 1 });
  await insertJob({ id: 'em_5', org: acme.orgId, destination: 'gmail.com', lane: 'broadcast' });
  await insertJob({ id: 'em_6', org: acme.orgId, destination: 'yahoo.com', due: 5 });
  await insertJob({ id: 'em_7', org: acme.orgId, destination: 'gmail.com', mode: 'test' });
  await insertJob({ id: 'em_8', org: other.orgId, destination: 'gmail.com', due: 5 });
  await svc.postline.services.db.query(
    `INSERT INTO delivery_destinations (org_id, mode, destination, grp, last_response, last_code, last_classification, last_at)
     VALUES ($1, 'live', 'gmail.com', 'google', '421 4.7.28 unusual rate', 421, 'rate_limited', $2)`,
    [acme.orgId, T0],
  );
  await svc.postline.services.db.query(
    `INSERT INTO shaping_groups (grp, held_until, held_reason) VALUES ('google', $1, '421 4.7.28')`,
    [at(30)],
  );
});

describe('GET /v1/queue', () => {
  it("counts an organization's waiting mail per destination and lane, in its key's mode only", async () => {
    const r = await orgs.acme.live.get('/v1/queue');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      object: 'list',
      data: [
        {
          destination: 'gmail.com',
          lane: 'transactional',
          // The shaping group of Google holds it for 30 minutes: the two due are deferred too, none queued.
          queued: 0,
          deferred: 3,
          held: 0,
          in_flight: 1,
          oldest_queued_at: '2026-06-01T09:30:00.000Z',
          paused_until: '2026-06-01T10:30:00.000Z',
          last_response: '421 4.7.28 unusual rate',
          last_classification: 'rate_limited',
        },
        expect.objectContaining({ destination: 'gmail.com', lane: 'broadcast', queued: 0, deferred: 1 }),
        expect.objectContaining({
          destination: 'yahoo.com',
          queued: 0,
          deferred: 1,
          paused_until: null,
          last_response: null,
        }),
      ],
    });
    const test = await orgs.acme.test.get('/v1/queue');
    expect(test.body.data).toEqual([expect.objectContaining({ destination: 'gmail.com', queued: 1 })]);
    const other = await orgs.other.live.get('/v1/queue');
    expect(other.body.data).toEqual([
      expect.objectContaining({ destination: 'gmail.com', deferred: 1, paused_until: null }),
    ]);
  });

  it('filters by destination, normalized, and refuses what is no domain name', async () => {
    const r = await orgs.acme.live.get('/v1/queue?destination=YAHOO.com');
    expect(r.body.data.map((d: { destination: string }) => d.destination)).toEqual(['yahoo.com']);
    const bad = await orgs.acme.live.get('/v1/queue?destination=localhost');
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('validation_error');
    expect(bad.body.error.message).toMatch(/`destination`/);
  });

  it('shows pauses recorded as events: the latest in force wins, and each ends on its own', async () => {
    const { acme, other } = orgs;
    const mine = await pauseDelivery(
      controls(),
      { destination: 'Yahoo.com', orgId: acme.orgId, actor: 'cli' },
      { until: at(120), reason: 'blocked' },
    );
    const everyone = await pauseDelivery(
      controls(),
      { destination: 'gmail.com', orgId: null, actor: 'cli' },
      { until: at(60) },
    );
    expect(mine).toMatchObject({ destination: 'yahoo.com', changed: true });
    await waitForPauses(everyone.position);
    const list = async (org = acme) =>
      Object.fromEntries(
        (await org.live.get('/v1/queue')).body.data.map((d: any) => [
          `${d.destination} ${d.lane}`,
          d.paused_until,
        ]),
      );
    expect(await list()).toEqual({
      'gmail.com transactional': at(60),
      'gmail.com broadcast': at(60),
      'yahoo.com transactional': at(120),
    });
    expect(await list(other)).toEqual({ 'gmail.com transactional': at(60) });
    clock.advance(61 * 60_000);
    expect(await list()).toMatchObject({
      'gmail.com transactional': null,
      'yahoo.com transactional': at(59),
    });
    const resumed = await resumeDelivery(controls(), {
      destination: 'yahoo.com',
      orgId: acme.orgId,
      actor: 'cli',
    });
    expect(resumed.changed).toBe(true);
    await waitForPauses(resumed.position);
    expect(await list()).toMatchObject({ 'yahoo.com transactional': null });
    // The delivery claim's rule: the jobs a pause in force holds.
    const held = async () =>
      (
        await svc.postline.services.db.query(
          `SELECT j.email_id FROM delivery_jobs j WHERE j.mode = 'live' AND ${pausedJobSql('j', '$1')} ORDER BY 1`,
          [clock.now()],
        )
      ).rows.map((r) => r.email_id);
    expect(await held()).toEqual([]);
    const othersPause = await pauseDelivery(
      controls(),
      { destination: 'gmail.com', orgId: other.orgId, actor: 'cli' },
      { until: at(10) },
    );
    await waitForPauses(othersPause.position);
    expect(await held()).toEqual(['em_8']);
    clock.advance(10 * 60_000);
    expect(await held()).toEqual([]);
    const again = await resumeDelivery(controls(), {
      destination: 'yahoo.com',
      orgId: acme.orgId,
      actor: 'cli',
    });
    expect(again).toEqual({ destination: 'yahoo.com', changed: false, position: undefined });
  });

  it("gives a destination's recent replies, newest first, of the last day and this organization only", async () => {
    const { acme, other } = orgs;
    const now = clock.now().getTime();
    const ago = (h: number) => new Date(now - h * 3600_000).toISOString();
    for (const [org, hours, code] of [
      [acme.orgId, 1, 421],
      [acme.orgId, 2, 550],
      [acme.orgId, 25, 451],
      [other.orgId, 1, 250],
    ] as const)
      await svc.postline.services.db.query(
        `INSERT INTO delivery_replies (org_id, mode, destination, at, smtp_code, response, classification)
         VALUES ($1, 'live', 'gmail.com', $2, $3, $4, $5)`,
        [org, ago(hours), code, `${code} reply`, code === 550 ? 'spam_or_reputation_block' : 'transient'],
      );
    const r = await acme.live.get('/v1/queue/Gmail.com/replies');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      object: 'list',
      data: [
        { at: ago(1), smtp_code: 421, response: '421 reply', classification: 'transient' },
        { at: ago(2), smtp_code: 550, response: '550 reply', classification: 'spam_or_reputation_block' },
      ],
    });
    expect((await acme.test.get('/v1/queue/gmail.com/replies')).body.data).toEqual([]);
    expect((await acme.live.get('/v1/queue/bad_domain/replies')).status).toBe(422);
  });
});

describe('retry and give-up requests', () => {
  const jobs = async () =>
    (
      await svc.postline.services.db.query(
        `SELECT email_id, due_at, expedite, give_up, claimed_until FROM delivery_jobs WHERE mode = 'live' ORDER BY email_id`,
      )
    ).rows.map((r) => ({
      ...r,
      due_at: r.due_at.toISOString(),
      claimed_until: r.claimed_until?.toISOString() ?? null,
    }));

  it('make the waiting, unclaimed mail of the destination due now, in their scope only; mail queued later is left', async () => {
    const { acme } = orgs;
    const process = new QueueControlsProcess(svc.postline.services);
    // A worker holds em_4 now.
    await svc.postline.services.db.query(
      `UPDATE delivery_jobs SET claimed_until = $1 WHERE email_id = 'em_4'`,
      [at(1)],
    );
    const before = await jobs();
    await retryDelivery(controls(), { destination: 'gmail.com', orgId: acme.orgId, actor: 'cli' });
    const now = clock.now().toISOString();
    await insertJob({ id: 'em_9', org: acme.orgId, destination: 'gmail.com', due: 30, queuedAt: 1 });
    await process.runOnce();
    const after = await jobs();
    const row = (rows: typeof after, id: string) => rows.find((r) => r.email_id === id)!;
    // Deferred and queued jobs of acme's gmail.com: due now, expedited.
    for (const id of ['em_1', 'em_2', 'em_3', 'em_5'])
      expect(row(after, id)).toMatchObject({ due_at: now, expedite: true, give_up: false });
    // Claimed by a worker, another destination, another organization, queued after the request: untouched.
    for (const id of ['em_4', 'em_6', 'em_8']) expect(row(after, id)).toEqual(row(before, id));
    expect(row(after, 'em_9')).toMatchObject({ expedite: false, due_at: at(30) });

    await giveUpDelivery(controls(), { destination: 'gmail.com', orgId: null, actor: 'cli' });
    await process.runOnce();
    const given = await jobs();
    for (const id of ['em_1', 'em_2', 'em_3', 'em_5', 'em_8'])
      expect(row(given, id)).toMatchObject({ give_up: true, due_at: now, claimed_until: null });
    expect(row(given, 'em_4').give_up).toBe(false);
    expect(row(given, 'em_6').give_up).toBe(false);
  });
});

describe('the queue controls process, following the log', () => {
  /** Counts its runs: each batch of the log it applies wakes one. */
  class Counted extends QueueControlsProcess {
    runs = 0;
    protected override async work(): Promise<number> {
      this.runs++;
      return 0;
    }
  }

  it('applies only batches with a retry or give-up request: others cost it no transaction and no run', async () => {
    const { services } = svc.postline;
    const process = new Counted(services);
    const caughtUp = async () => {
      const head = await services.store.headPosition({ committed: true });
      await expect
        .poll(() => readCheckpoint(services.db, 'process_checkpoints', 'queue-controls'))
        .toBe(head);
    };
    process.start();
    try {
      await caughtUp();
      const before = process.runs;
      for (let i = 0; i < 5; i++)
        await services.store.append(
          `unrelated-${i}`,
          [
            {
              type: 'SomethingElse',
              data: {},
              metadata: { orgId: orgs.acme.orgId, mode: 'live', actor: 'test' },
            },
          ],
          { expectedRevision: 'no_stream' },
        );
      await caughtUp();
      expect(process.runs).toBe(before);
      await retryDelivery(controls(), { destination: 'yahoo.com', orgId: orgs.acme.orgId, actor: 'cli' });
      await expect.poll(() => process.runs).toBeGreaterThan(before);
    } finally {
      await process.stop();
    }
  });
});

describe('delivery_pauses from the log', () => {
  it('is reproduced by a rebuild', async () => {
    const { services } = svc.postline;
    const read = async () =>
      (await services.db.query('SELECT * FROM delivery_pauses ORDER BY org_id, destination')).rows;
    const p = await pauseDelivery(
      services,
      { destination: 'outlook.com', orgId: orgs.other.orgId, actor: 'cli' },
      { until: at(90), reason: 'Microsoft 5.7.606' },
    );
    await waitForPauses(p.position);
    const before = await read();
    expect(before).toContainEqual({
      org_id: orgs.other.orgId,
      destination: 'outlook.com',
      until: new Date(at(90)),
      reason: 'Microsoft 5.7.606',
      paused_by: 'cli',
    });
    await rebuildProjection(services.db, services.store, deliveryPausesProjection, services.log);
    expect(await read()).toEqual(before);
  });
});
