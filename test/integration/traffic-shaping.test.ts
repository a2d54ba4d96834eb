import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ShapingGroup } from '../../domain/delivery/shaping-groups.ts';
import type { ShapingReply } from '../../domain/delivery/shaping-rules.ts';
import { ManualClock } from '../../platform/clock.ts';
import { connectPostgres, type Database } from '../../platform/db/database.ts';
import { migrate } from '../../platform/db/migrations.ts';
import { createLogger } from '../../platform/logger.ts';
import { shapingMigrations } from '../../processes/delivery/shaping/shaping.schema.ts';
import { TrafficShaping } from '../../processes/delivery/shaping/traffic-shaping.ts';
import { createTestDatabaseUrl, TEST_POOL_SIZE } from '../support/databases.ts';

const log = createLogger('silent');
const clock = new ManualClock('2026-06-01T00:00:00Z');
const pools: Database[] = [];
let workers: TrafficShaping[] = [];
let drop: () => Promise<void>;

/** A group of its own per test, so that tests share no row. */
let seq = 0;
const group = (
  limits: Partial<ShapingGroup['limits']> = {},
  replies: ShapingGroup['replies'] = [],
): ShapingGroup => ({
  name: `test-${++seq}`,
  limits: { connections: 2, messagesPerConnection: 10, perMinute: 600, perHour: 100_000, ...limits },
  replies,
});

const row = async (g: ShapingGroup) =>
  (
    await pools[0].query<{
      backoff_level: number;
      held_until: Date | null;
      rate_factor: number;
      version: string;
    }>(
      'SELECT backoff_level, held_until, rate_factor, xmin::text AS version FROM shaping_groups WHERE grp = $1',
      [g.name],
    )
  ).rows[0];

const reply = (
  smtpResponse: string,
  classification: string,
  result: ShapingReply['result'] = 'deferred',
) => ({
  smtpCode: Number(smtpResponse.slice(0, 3)),
  smtpResponse,
  classification,
  result,
});
const slowDown = reply('421 4.7.0 Too many messages, slow down', 'rate_limited');
const delivered = reply('250 2.0.0 OK', 'unknown', 'delivered');
const minutes = (n: number) => n * 60_000;
const inMs = (ms: number) => new Date(clock.now().getTime() + ms);

/** Admissions at the standing clock, asked `demand` at a time by every worker at once. */
async function admitted(g: ShapingGroup, demand: number): Promise<number> {
  const all = await Promise.all(workers.flatMap((w) => Array.from({ length: demand }, () => w.admit(g))));
  return all.filter((a) => a.ok).length;
}

beforeAll(async () => {
  const made = await createTestDatabaseUrl();
  drop = made.drop;
  for (let i = 0; i < 3; i++) pools.push(connectPostgres(made.url, TEST_POOL_SIZE));
  await migrate(pools[0], shapingMigrations);
  workers = pools.map(
    (db) =>
      new TrafficShaping({
        db,
        clock,
        log,
        policy: {
          groups: [],
          default: {
            connections: 5,
            messagesPerConnection: 100,
            perMinute: 600,
            perHour: 20_000,
            replies: [],
          },
        },
      }),
  );
});

afterAll(async () => {
  for (const db of pools) await db.close();
  await drop?.();
});

describe('TrafficShaping.admit: GCRA shared through PostgreSQL', () => {
  it('given three processes hammering one group, never admits more than the per-minute rate and its burst', async () => {
    // Given: 600 per minute (one message per 100 ms), a burst of 60
    const g = group({ perMinute: 600 });
    const intervalMs = 100;
    const burst = 60;
    const start = clock.now().getTime();
    let total = 0;
    // When: 20 rounds, 250 ms of the clock apart, in each 3 × 40 concurrent requests
    for (let round = 0; round < 20; round++) {
      if (round > 0) clock.advance(250);
      const n = await admitted(g, 40);
      total += n;
      // Then: never more than the bound over the clock's window so far
      const elapsed = clock.now().getTime() - start;
      expect(total).toBeLessThanOrEqual(Math.floor(burst + elapsed / intervalMs));
    }
    // And: demand exceeded supply throughout, so the rate was used whole (no starvation)
    const elapsed = clock.now().getTime() - start;
    expect(total).toBe(Math.floor(burst + elapsed / intervalMs));
  });

  it('given a per-hour rate below the per-minute one, the per-hour rate binds', async () => {
    // Given: 120 per hour (one per 30 s, a burst of 2)
    const g = group({ perMinute: 600, perHour: 120 });
    const start = clock.now().getTime();
    let total = 0;
    for (let round = 0; round < 12; round++) {
      if (round > 0) clock.advance(10_000);
      total += await admitted(g, 5);
    }
    const elapsed = clock.now().getTime() - start;
    expect(total).toBeLessThanOrEqual(Math.floor(2 + elapsed / 30_000));
    expect(total).toBe(Math.floor(2 + elapsed / 30_000));
  });

  it('given a refusal, says when to try again: then, and not before, the message is admitted', async () => {
    // Given: the burst used up
    const g = group({ perMinute: 60 });
    expect(await admitted(g, 6)).toBe(6);
    // When
    const refused = await workers[1].admit(g);
    // Then
    expect(refused).toEqual({ ok: false, until: inMs(1000), reason: `rate: 60 per minute for ${g.name}` });
    clock.advance(999);
    expect((await workers[2].admit(g)).ok).toBe(false);
    clock.advance(1);
    expect(await workers[0].admit(g)).toEqual({ ok: true });
  });

  it('given several messages at once, counts each; more than the burst waits for an empty bucket', async () => {
    const g = group({ perMinute: 60 });
    expect((await workers[0].admit(g, 4)).ok).toBe(true);
    expect((await workers[1].admit(g, 3)).ok).toBe(false);
    expect((await workers[1].admit(g, 2)).ok).toBe(true);
    clock.advance(minutes(1));
    expect((await workers[2].admit(g, 20)).ok).toBe(true);
    expect((await workers[2].admit(g, 1)).ok).toBe(false);
  });
});

describe('TrafficShaping.observe', () => {
  it('given a reply a pause rule matches, holds the group in every process for its time', async () => {
    // Given
    const g = group({}, [
      { status: '4.7.28', action: 'pause', forMs: minutes(15) },
      { match: 'try later', action: 'pause', forMs: minutes(1) },
    ]);
    expect((await workers[0].admit(g)).ok).toBe(true);
    // When
    await workers[0].observe(g, reply('421 4.7.28 unusual rate of unsolicited mail', 'rate_limited'));
    // Then
    expect(await workers[1].heldUntil(g.name)).toEqual(inMs(minutes(15)));
    const refused = await workers[2].admit(g);
    expect(refused).toMatchObject({ ok: false, until: inMs(minutes(15)) });
    expect(refused.ok === false && refused.reason).toMatch(/^held: paused by a reply rule: 421 4\.7\.28/);
    // A shorter pause does not shorten the hold, and writes nothing
    const before = await row(g);
    clock.advance(minutes(5));
    await workers[1].observe(g, reply('421 4.7.0 try later', 'transient'));
    expect((await row(g)).version).toBe(before.version);
    clock.advance(minutes(10));
    expect(await workers[1].heldUntil(g.name)).toBeNull();
    expect((await workers[2].admit(g)).ok).toBe(true);
  });

  it('given slow-down replies, backs the group off 1, 2, 4 … minutes up to an hour; replies while held change nothing', async () => {
    const g = group();
    const held: number[] = [];
    for (let level = 1; level <= 8; level++) {
      await workers[level % 3].observe(g, slowDown);
      const until = await workers[0].heldUntil(g.name);
      held.push(((until?.getTime() ?? 0) - clock.now().getTime()) / 60_000);
      // Replies of messages already in flight arrive while held: no step further, no write
      const before = await row(g);
      await workers[(level + 1) % 3].observe(g, slowDown);
      expect(await row(g)).toEqual(before);
      clock.set(until as Date);
    }
    expect(held).toEqual([1, 2, 4, 8, 16, 32, 60, 60]);
    expect((await row(g)).backoff_level).toBe(8);
  });

  it('given a back-off another process started, a delivery where the hold was only read (an unmetered group) ends it', async () => {
    // Given: backed off twice by one process
    const g = group();
    await workers[0].observe(g, slowDown);
    clock.advance(minutes(1));
    await workers[0].observe(g, slowDown);
    clock.advance(minutes(2));
    // When: another process reads the hold (over: null) and sees a delivery
    expect(await workers[1].heldUntil(g.name)).toBeNull();
    await workers[1].observe(g, delivered);
    // Then
    expect((await row(g)).backoff_level).toBe(0);
    await workers[2].observe(g, slowDown);
    expect(await workers[0].heldUntil(g.name)).toEqual(inMs(minutes(1)));
  });

  it('given a delivery after a back-off, the next slow-down starts the curve again; a delivery otherwise writes nothing', async () => {
    // Given: backed off twice by one process
    const g = group();
    await workers[0].observe(g, slowDown);
    clock.advance(minutes(1));
    await workers[0].observe(g, slowDown);
    clock.advance(minutes(2));
    // When: another process admits (learning the level) and sees a delivery
    expect((await workers[1].admit(g)).ok).toBe(true);
    await workers[1].observe(g, delivered);
    // Then
    expect((await row(g)).backoff_level).toBe(0);
    const quiet = await row(g);
    await workers[1].observe(g, delivered);
    await workers[2].observe(g, delivered);
    expect(await row(g)).toEqual(quiet);
    await workers[2].observe(g, slowDown);
    expect(await workers[0].heldUntil(g.name)).toEqual(inMs(minutes(1)));
  });

  it('given a halving reply, halves the rates (once a minute at most, to a sixteenth), and they recover per quiet hour', async () => {
    // Given
    const g = group({ perMinute: 600 }, [{ match: 'slow', action: 'halve' }]);
    // When
    await workers[0].observe(g, reply('421 4.7.0 slow down please', 'rate_limited'));
    await workers[1].observe(g, reply('421 4.7.0 slow down please', 'rate_limited'));
    // Then: one halving; the burst is a tenth of 300
    expect((await row(g)).rate_factor).toBe(0.5);
    expect(await admitted(g, 20)).toBe(30);
    for (let i = 0; i < 6; i++) {
      clock.advance(minutes(1));
      await workers[i % 3].observe(g, reply('421 slow', 'rate_limited'));
    }
    expect((await row(g)).rate_factor).toBe(1 / 16);
    // Two quiet hours later the factor is a quarter: a burst of 15 after the bucket emptied
    clock.advance(minutes(120));
    expect(await admitted(g, 10)).toBe(15);
  });

  it('given a reply that is no slow-down, writes nothing', async () => {
    const g = group();
    await workers[0].observe(g, reply('550 5.1.1 user unknown', 'invalid_recipient', 'bounced'));
    expect(await row(g)).toBeUndefined();
  });
});
