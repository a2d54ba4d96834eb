import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SHAPING } from '../../domain/delivery/shaping-defaults.ts';
import { groupOf } from '../../domain/delivery/shaping-rules.ts';
import { classifyBounce } from '../../domain/emails/bounce-classes.ts';
import { ManualClock } from '../../platform/clock.ts';
import { connectPostgres, type Database } from '../../platform/db/database.ts';
import { migrate } from '../../platform/db/migrations.ts';
import { createLogger } from '../../platform/logger.ts';
import { OutboundMta } from '../../processes/delivery/mta/outbound.ts';
import { shapingMigrations } from '../../processes/delivery/shaping/shaping.schema.ts';
import { TrafficShaping } from '../../processes/delivery/shaping/traffic-shaping.ts';
import { createTestDatabaseUrl, TEST_POOL_SIZE } from '../support/databases.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { outboundMessage } from '../support/outbound-message.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

const log = createLogger('silent');
let dns: Awaited<ReturnType<typeof startDnsServer>>;
const sinks: SmtpSink[] = [];
const mtas: OutboundMta[] = [];

function publishMx(domain: string, hosts: { host: string; priority: number }[]) {
  dns.set(
    domain,
    'MX',
    hosts.map((h) => ({ exchange: h.host, priority: h.priority })),
  );
  for (const h of hosts) dns.set(h.host, 'A', ['127.0.0.1']);
}

async function sink(options: Parameters<typeof startSmtpSink>[0] = {}) {
  const s = await startSmtpSink(options);
  sinks.push(s);
  return s;
}

function mta(port: number, maxConnectionsPerDestination = 5) {
  const m = new OutboundMta({
    dnsServers: [dns.serverAddress],
    port,
    log,
    timeoutMs: 5_000,
    maxConnectionsPerDestination,
    heloName: 'out.postline.test',
  });
  mtas.push(m);
  return m;
}

const message = (to: string) => outboundMessage({ to: [to] });

beforeAll(async () => {
  dns = await startDnsServer();
});

afterAll(async () => {
  await Promise.all(mtas.map((m) => m.close()));
  await Promise.all(sinks.map((s) => s.close()));
  await dns?.close();
});

describe("outbound MTA: a shaping group's connection limits", () => {
  it('given messages per connection 3, closes each connection after its third message', async () => {
    // Given
    const s = await sink();
    publishMx('per-connection.test', [{ host: 'mx.per-connection.test', priority: 10 }]);
    const out = mta(s.port);
    // When: seven messages, one after the other
    for (let i = 0; i < 7; i++) {
      const to = `r${i}@per-connection.test`;
      const [outcome] = await out.send(message(to), [to], { limits: { messagesPerConnection: 3 } });
      expect(outcome.result).toBe('delivered');
    }
    // Then
    const perSession = new Map<string, number>();
    for (const m of s.messages) perSession.set(m.sessionId, (perSession.get(m.sessionId) ?? 0) + 1);
    expect([...perSession.values()]).toEqual([3, 3, 1]);
    expect(s.connections.total).toBe(3);
  });

  it("given a group's connection cap below the MTA's, never opens more than the group's", async () => {
    // Given: the MTA allows 5 connections, the group 1
    const s = await sink({ dataDelayMs: 30 });
    publishMx('one-connection.test', [{ host: 'mx.one-connection.test', priority: 10 }]);
    const out = mta(s.port, 5);
    // When: eight sends at once
    const sends = Array.from({ length: 8 }, (_, i) => {
      const to = `r${i}@one-connection.test`;
      return out.send(message(to), [to], { limits: { connections: 1, messagesPerConnection: 100 } });
    });
    const outcomes = (await Promise.all(sends)).flat();
    // Then
    expect(outcomes.every((o) => o.result === 'delivered')).toBe(true);
    expect(s.connections.maxConcurrent).toBe(1);
    expect(s.connections.total).toBe(1);
  });
});

describe('outbound MTA: the MX hosts of a destination, for its shaping group', () => {
  it('lists them by preference, equal preferences by name; the group follows from them', async () => {
    // Given
    publishMx('workspace.test', [
      { host: 'alt2.aspmx.l.google.com', priority: 20 },
      { host: 'alt1.aspmx.l.google.com', priority: 20 },
      { host: 'aspmx.l.google.com', priority: 10 },
    ]);
    const out = mta(25);
    // When
    const hosts = await out.mxHostsOf('workspace.test');
    // Then
    expect(hosts).toEqual(['aspmx.l.google.com', 'alt1.aspmx.l.google.com', 'alt2.aspmx.l.google.com']);
    expect(groupOf(DEFAULT_SHAPING, 'workspace.test', hosts).name).toBe('google');
    dns.set('no-mx.test', 'A', ['127.0.0.1']);
    expect(await out.mxHostsOf('no-mx.test')).toEqual(['no-mx.test']);
    expect(await out.mxHostsOf('nowhere.test')).toEqual([]);
  });
});

describe('a destination that says slow down, through the MTA and TrafficShaping', () => {
  let db: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const made = await createTestDatabaseUrl();
    drop = made.drop;
    db = connectPostgres(made.url, TEST_POOL_SIZE);
    await migrate(db, shapingMigrations);
  });
  afterAll(async () => {
    await db?.close();
    await drop?.();
  });

  it("given Gmail's 421 4.7.28 at RCPT, the MTA's outcome pauses the group for 15 minutes", async () => {
    // Given
    const s = await sink();
    publishMx('gmail-like.test', [{ host: 'gmail-smtp-in.l.google.com', priority: 5 }]);
    s.scriptRecipient('x@gmail-like.test', {
      code: 421,
      message:
        '4.7.28 Gmail has detected an unusual rate of unsolicited mail originating from your IP address.',
    });
    const clock = new ManualClock('2026-06-01T00:00:00Z');
    const shaping = new TrafficShaping({ db, clock, log, policy: DEFAULT_SHAPING });
    const out = mta(s.port);
    const group = shaping.groupOf('gmail-like.test', await out.mxHostsOf('gmail-like.test'));
    expect(await shaping.admit(group)).toEqual({ ok: true });
    // When
    const [outcome] = await out.send(message('x@gmail-like.test'), ['x@gmail-like.test'], {
      limits: group.limits,
    });
    await shaping.observe(group, { ...outcome, classification: classifyBounce(outcome.smtpResponse) });
    // Then
    expect(outcome).toMatchObject({ result: 'deferred', smtpCode: 421 });
    expect(await shaping.heldUntil('google')).toEqual(new Date('2026-06-01T00:15:00Z'));
    expect(await shaping.admit(group)).toMatchObject({ ok: false, until: new Date('2026-06-01T00:15:00Z') });
  });
});
