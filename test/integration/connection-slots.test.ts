import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { connectPostgres, type Database } from '../../platform/db/database.ts';
import { migrate } from '../../platform/db/migrations.ts';
import { createLogger } from '../../platform/logger.ts';
import { OutboundMta } from '../../processes/delivery/mta/outbound.ts';
import { ConnectionSlots, type SlotLease } from '../../processes/delivery/shaping/connection-slots.ts';
import { shapingMigrations } from '../../processes/delivery/shaping/shaping.schema.ts';
import { createTestDatabaseUrl, TEST_POOL_SIZE } from '../support/databases.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { outboundMessage } from '../support/outbound-message.ts';
import { PATIENCE } from '../support/patience.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

const log = createLogger('silent');
const clock = new ManualClock('2026-06-01T00:00:00Z');
const pools: Database[] = [];
let slots: ConnectionSlots[] = [];
let drop: () => Promise<void>;

const held = async (group: string) =>
  (
    await pools[0].query<{ n: number }>(
      'SELECT count(*)::int AS n FROM shaping_connections WHERE grp = $1 AND until > $2',
      [group, clock.now().toISOString()],
    )
  ).rows[0].n;

beforeAll(async () => {
  const made = await createTestDatabaseUrl();
  drop = made.drop;
  for (let i = 0; i < 3; i++) pools.push(connectPostgres(made.url, TEST_POOL_SIZE));
  await migrate(pools[0], shapingMigrations);
  slots = pools.map((db) => new ConnectionSlots({ db, clock, log, leaseMs: 30_000 }));
});

afterAll(async () => {
  for (const s of slots) s.close();
  for (const db of pools) await db.close();
  await drop?.();
});

describe('ConnectionSlots: a group’s connections across processes', () => {
  it('given three processes asking at once, never lease more slots than the group has', async () => {
    // When: 3 × 5 requests at once for a group of 4 connections
    const got = await Promise.all(
      slots.flatMap((s) => Array.from({ length: 5 }, () => s.acquire('g-race', 4))),
    );
    const leases = got.filter((l): l is SlotLease => l !== null);
    // Then
    expect(leases.length).toBeLessThanOrEqual(4);
    for (let more = await slots[0].acquire('g-race', 4); more; more = await slots[1].acquire('g-race', 4))
      leases.push(more);
    expect(leases.map((l) => l.slot).sort()).toEqual([0, 1, 2, 3]);
    expect(await slots[2].acquire('g-race', 4)).toBeNull();
    // A slot given back is free for another process
    await leases[0].release();
    await leases[0].release();
    expect((await slots[2].acquire('g-race', 4))?.slot).toBe(leases[0].slot);
  });

  it('given a process that stops renewing (it died), its slots are free once their lease ended', async () => {
    const dead = new ConnectionSlots({ db: pools[0], clock, log, leaseMs: 30_000 });
    expect(await dead.acquire('g-dead', 1)).not.toBeNull();
    dead.close();
    expect(await slots[1].acquire('g-dead', 1)).toBeNull();
    // A live holder's renewal keeps its slot past the first lease
    const live = await slots[2].acquire('g-live', 1);
    clock.advance(20_000);
    await slots[2].renew();
    clock.advance(20_000);
    expect(await slots[1].acquire('g-dead', 1)).not.toBeNull();
    expect(await slots[1].acquire('g-live', 1)).toBeNull();
    await live?.release();
  });
});

describe('outbound MTA with connection slots', () => {
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  let sink: SmtpSink;
  const mtas: OutboundMta[] = [];
  beforeAll(async () => {
    dns = await startDnsServer();
    sink = await startSmtpSink({ dataDelayMs: 50 });
  });
  afterAll(async () => {
    await Promise.all(mtas.map((m) => m.close()));
    await sink?.close();
    await dns?.close();
  });

  const message = (to: string) => outboundMessage({ to: [to] });
  /** An MTA as a process of its own runs it (its connection slots through `db`), to the sink; closed after the file. */
  const mtaWithSlots = (timeoutMs: number, db = pools[0]) => {
    const mta = new OutboundMta({
      dnsServers: [dns.serverAddress],
      port: sink.port,
      log,
      timeoutMs,
      heloName: 'out.postline.test',
      connectionSlots: new ConnectionSlots({ db, clock, log }),
    });
    mtas.push(mta);
    return mta;
  };

  it("given two processes sending to one group, the group's connections hold across both", async () => {
    // Given: two MTAs (two processes), each allowing 2 connections per host; the group allows 2 in all
    dns.set('slots.test', 'MX', [{ exchange: 'mx.slots.test', priority: 10 }]);
    dns.set('mx.slots.test', 'A', ['127.0.0.1']);
    // A process waits for a slot up to 20 s; the other's idle connections hold theirs for 5 s at most.
    for (let i = 0; i < 2; i++) mtaWithSlots(20_000, pools[i]);
    // When: six sends from each at once
    const sends = mtas.flatMap((mta, m) =>
      Array.from({ length: 6 }, (_, i) => {
        const to = `r${m}-${i}@slots.test`;
        return mta.send(message(to), [to], { limits: { group: 'g-mta', connections: 2 } });
      }),
    );
    const outcomes = (await Promise.all(sends)).flat();
    // Then
    expect(outcomes.every((o) => o.result === 'delivered')).toBe(true);
    expect(sink.connections.maxConcurrent).toBeLessThanOrEqual(2);
    // Closing the MTAs closes their connections and gives their slots back
    await Promise.all(mtas.map((m) => m.close()));
    await expect.poll(() => held('g-mta'), PATIENCE).toBe(0);
  });

  it('given the group’s one slot held elsewhere until the connection time-out, defers without asking any MX host, as no attempt', async () => {
    // Given: a destination with two MX hosts; another process holds the group's one slot
    dns.set('busy.test', 'MX', [
      { exchange: 'mx1.busy.test', priority: 10 },
      { exchange: 'mx2.busy.test', priority: 20 },
    ]);
    dns.set('mx1.busy.test', 'A', ['127.0.0.1']);
    dns.set('mx2.busy.test', 'A', ['127.0.0.1']);
    const elsewhere = await slots[1].acquire('g-busy', 1);
    expect(elsewhere).not.toBeNull();
    sink.reset();
    const mta = mtaWithSlots(1_000);
    // When
    const outcomes = await mta.send(message('a@busy.test'), ['a@busy.test'], {
      limits: { group: 'g-busy', connections: 1 },
    });
    // Then: deferred, said to be no attempt, and no host was connected to (the next MX would wait alike)
    expect(outcomes).toEqual([
      {
        recipient: 'a@busy.test',
        result: 'deferred',
        smtpResponse:
          'local: all 1 connections of the shaping group g-busy are in use; not counted as an attempt',
        attempted: false,
      },
    ]);
    expect(sink.connections.total).toBe(0);
    await elsewhere?.release();
  });

  it('given the group’s one slot held by an idle connection of another egress source, frees it for the send that waits', async () => {
    // Given: an MTA whose idle connections stay open 5 s; the group allows one connection; one source sent
    dns.set('free.test', 'MX', [{ exchange: 'mx.free.test', priority: 10 }]);
    dns.set('mx.free.test', 'A', ['127.0.0.1']);
    sink.reset();
    const mta = mtaWithSlots(60_000);
    const send = (to: string, n: number, withinMs?: number) =>
      mta.send(message(to), [to], {
        limits: {
          group: 'g-free',
          connections: 1,
          source: { address: `127.0.0.${n}`, helo: `s${n}.postline.test` },
        },
        withinMs,
      });
    expect((await send('a@free.test', 2))[0].result).toBe('delivered');
    // When: another source sends, with less time than the idle connection would stay open
    const [outcome] = await send('b@free.test', 3, 3_000);
    // Then: the idle connection gave its slot up, and each message came from its own source
    expect(outcome.result, outcome.smtpResponse).toBe('delivered');
    expect(sink.messages.map((m) => [m.remoteAddress, m.heloName])).toEqual([
      ['127.0.0.2', 's2.postline.test'],
      ['127.0.0.3', 's3.postline.test'],
    ]);
    // One connection each: the idle one was not reused for the other source. (Its slot's release follows the
    // client's close, which the receiving server may notice a moment after the next connection's arrival, so a
    // count of connections open at once there would race; the slot limit itself is tested above.)
    expect(sink.connections.total).toBe(2);
  });
});
