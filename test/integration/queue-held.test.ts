import { Writable } from 'node:stream';
import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../bin/cli/commands.ts';
import { ManualClock } from '../../platform/clock.ts';
import { useTwoOrgs } from '../support/service.ts';

/**
 * Mail that delivery will not take now, although its time has come, is not `queued`: an operator's pause of its
 * destination holds it (`held`, Postfix's hold queue), its shaping group's hold (a back-off, a pause from a reply
 * rule) defers it (`deferred`, as Postfix keeps mail for a throttled site). A give-up is claimed through a pause,
 * so it stays `queued`. The same in the API, the CLI and /metrics.
 */
const clock = new ManualClock('2026-06-01T10:00:00Z');
const { svc, orgs } = useTwoOrgs(() => ({ clock }));
const at = (minutes: number) => new Date(clock.now().getTime() + minutes * 60_000).toISOString();

async function insertJob(j: {
  id: string;
  destination: string;
  due?: number;
  claimed?: number;
  giveUp?: boolean;
}) {
  await svc.postline.services.db.query(
    `INSERT INTO delivery_jobs (email_id, destination, org_id, mode, lane, queue, due_at, claimed_until, give_up, queued_at)
     VALUES ($1, $2, $3, 'live', 'transactional', $3 || ':transactional', $4, $5, $6, $7)`,
    [
      j.id,
      j.destination,
      orgs.acme.orgId,
      at(j.due ?? -1),
      j.claimed === undefined ? null : at(j.claimed),
      j.giveUp ?? false,
      at(-10),
    ],
  );
}

beforeAll(async () => {
  const db = svc.postline.services.db;
  // paused.test: paused by the operator for acme; two due, one waiting for its retry, one given up, one in flight.
  await insertJob({ id: 'em_p1', destination: 'paused.test' });
  await insertJob({ id: 'em_p2', destination: 'paused.test' });
  await insertJob({ id: 'em_p3', destination: 'paused.test', due: 20 });
  await insertJob({ id: 'em_p4', destination: 'paused.test', giveUp: true });
  await insertJob({ id: 'em_p5', destination: 'paused.test', claimed: 1 });
  await db.query(
    `INSERT INTO delivery_pauses (org_id, destination, until, reason, paused_by) VALUES ($1, 'paused.test', $2, 'blocked', 'cli')`,
    [orgs.acme.orgId, at(60)],
  );
  // held.test: its shaping group backs off for 30 minutes; two due, one given up.
  await insertJob({ id: 'em_h1', destination: 'held.test' });
  await insertJob({ id: 'em_h2', destination: 'held.test' });
  await insertJob({ id: 'em_h3', destination: 'held.test', giveUp: true });
  await db.query(
    `INSERT INTO delivery_destinations (org_id, mode, destination, grp) VALUES ($1, 'live', 'held.test', 'mx:held')`,
    [orgs.acme.orgId],
  );
  await db.query(`INSERT INTO shaping_groups (grp, held_until, held_reason) VALUES ('mx:held', $1, '421')`, [
    at(30),
  ]);
  // open.test: nothing holds it.
  await insertJob({ id: 'em_o1', destination: 'open.test' });
});

const counts = (r: { queued: number; deferred: number; held: number; in_flight: number }) => ({
  queued: r.queued,
  deferred: r.deferred,
  held: r.held,
  in_flight: r.in_flight,
});

describe('mail held back by a pause or a shaping hold', () => {
  it('GET /v1/queue counts it as held (a pause) or deferred (a shaping hold), never queued', async () => {
    const r = await orgs.acme.live.get('/v1/queue');
    expect(r.status).toBe(200);
    const rows = Object.fromEntries(r.body.data.map((d: any) => [d.destination, counts(d)]));
    expect(rows).toEqual({
      'paused.test': { queued: 1, deferred: 0, held: 3, in_flight: 1 },
      'held.test': { queued: 1, deferred: 2, held: 0, in_flight: 0 },
      'open.test': { queued: 1, deferred: 0, held: 0, in_flight: 0 },
    });
    // Once the pause and the hold have ended, the same mail is due: queued (the retry time of em_p3 has come too).
    clock.advance(61 * 60_000);
    const later = await orgs.acme.live.get('/v1/queue');
    const after = Object.fromEntries(later.body.data.map((d: any) => [d.destination, counts(d)]));
    expect(after['paused.test']).toEqual({ queued: 5, deferred: 0, held: 0, in_flight: 0 });
    expect(after['held.test']).toEqual({ queued: 3, deferred: 0, held: 0, in_flight: 0 });
    clock.advance(-61 * 60_000);
  });

  it('postline queue shows a HELD column and `held` in --json', async () => {
    const queue = async (...args: string[]) => {
      let output = '';
      const out = new Writable({
        write(chunk, _encoding, done) {
          output += chunk.toString();
          done();
        },
      });
      expect(await runCommand(['queue', ...args], svc.postline, out)).toBe(0);
      return output.trimEnd().split('\n');
    };
    const lines = await queue('--org', orgs.acme.orgId);
    expect(lines[0]).toMatch(/^ORG +MODE +DESTINATION +LANE +QUEUED +DEFERRED +HELD +IN_FLIGHT +OLDEST /);
    const line = (destination: string) => lines.find((l) => l.includes(` ${destination} `));
    expect(line('paused.test')).toMatch(/ paused\.test +transactional +1 +0 +3 +1 /);
    expect(line('held.test')).toMatch(/ held\.test +transactional +1 +2 +0 +0 /);

    const json = await queue('--destination', 'paused.test', '--json');
    expect(json.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ destination: 'paused.test', queued: 1, deferred: 0, held: 3, in_flight: 1 }),
    ]);
  });

  it('postline_queue_messages has the same states', async () => {
    const res = await request(`${svc.baseUrl}/metrics`);
    const text = await res.body.text();
    const samples: Record<string, number> = {};
    for (const m of text.matchAll(
      /^postline_queue_messages\{destination="([^"]*)",lane="[^"]*",state="([^"]*)"\} (\d+)$/gm,
    ))
      samples[`${m[1]} ${m[2]}`] = Number(m[3]);
    expect(samples).toEqual({
      'paused.test queued': 1,
      'paused.test held': 3,
      'paused.test in_flight': 1,
      'held.test queued': 1,
      'held.test deferred': 2,
      'open.test queued': 1,
    });
  });
});
