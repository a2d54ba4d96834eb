import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { METRIC_DESTINATIONS } from '../../processes/delivery/queue-view.ts';
import { useTestService } from '../support/service.ts';

const clock = new ManualClock('2026-06-01T10:00:00Z');
const svc = useTestService(() => ({ clock }));

/** `postline_queue_messages` samples as `destination lane state` → value. */
async function queueMessages(): Promise<Record<string, number>> {
  const res = await request(`${svc.baseUrl}/metrics`);
  const text = await res.body.text();
  expect(res.statusCode, text).toBe(200);
  const out: Record<string, number> = {};
  for (const m of text.matchAll(
    /^postline_queue_messages\{destination="([^"]*)",lane="([^"]*)",state="([^"]*)"\} (\d+)$/gm,
  ))
    out[`${m[1]} ${m[2]} ${m[3]}`] = Number(m[4]);
  return out;
}

describe('postline_queue_messages', () => {
  it('counts waiting mail per destination, lane and state; past the largest destinations, the rest as "other"', async () => {
    expect(await queueMessages()).toEqual({});
    const now = clock.now().getTime();
    const t = (minutes: number) => new Date(now + minutes * 60_000).toISOString();
    // d00 … d51: destination i has 60 - i queued messages; d00 also one deferred and one in flight, in two lanes.
    const rows: unknown[][] = [];
    for (let i = 0; i < METRIC_DESTINATIONS + 2; i++)
      for (let n = 0; n < 60 - i; n++)
        rows.push([`em_${i}_${n}`, `d${String(i).padStart(2, '0')}.example`, t(-1), null, 'broadcast']);
    rows.push(['em_x1', 'd00.example', t(10), null, 'transactional']);
    rows.push(['em_x2', 'd00.example', t(-1), t(1), 'transactional']);
    await svc.postline.services.db.query(
      `INSERT INTO delivery_jobs (email_id, destination, org_id, mode, lane, queue, due_at, claimed_until)
       SELECT e, d, 'org_1', 'live', l, 'org_1:' || l, due, claimed
       FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[]) AS x(e, d, due, claimed, l)`,
      [0, 1, 2, 3, 4].map((c) => rows.map((r) => r[c])),
    );
    const samples = await queueMessages();
    expect(samples['d00.example broadcast queued']).toBe(60);
    expect(samples['d00.example transactional deferred']).toBe(1);
    expect(samples['d00.example transactional in_flight']).toBe(1);
    expect(samples['d49.example broadcast queued']).toBe(11);
    expect(samples['d50.example broadcast queued']).toBeUndefined();
    // The two smallest destinations, summed: 10 + 9.
    expect(samples['other broadcast queued']).toBe(19);
    const destinations = new Set(Object.keys(samples).map((k) => k.split(' ')[0]));
    expect(destinations.size).toBe(METRIC_DESTINATIONS + 1);
    // The state is the time's: once the claim and the retry time have passed, both are queued.
    clock.advance(11 * 60_000);
    expect(await queueMessages()).toMatchObject({ 'd00.example transactional queued': 2 });
  });
});
