import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { BroadcastExpansionProcess } from '../../processes/broadcasts/broadcast-expansion.process.ts';
import { SimulatorProcess } from '../../processes/simulator/simulator.process.ts';
import { emailLinksProjection } from '../../projections/email-links.projection.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { type ApiClient, type ApiResponse, type TestOrg, useTestService } from '../support/service.ts';
import { oneClick, unsubscribeLink } from '../support/unsubscribe-links.ts';

/**
 * A broadcast's recipients by what became of them, and the links clicked in its emails (Resend's
 * `broadcasts.recipients` and `clickedLinks`): a test-mode broadcast to the simulator's addresses, on a manual
 * clock (docs/broadcasts.md, "Recipients and clicked links").
 */
const clock = new ManualClock('2026-09-01T08:00:00Z');
const SIM = 'simulator.postline.dev';
const svc = useTestService(() => ({ clock }));
let acme: TestOrg;
let broadcastId: string;
const contactIds: Record<string, string> = {};

const ok = (r: ApiResponse, status = 200) => {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
};
const settled = async () => {
  const { store, readYourWrites } = svc.postline.services;
  await readYourWrites.waitFor(
    ['emails', 'email-links', 'broadcasts'],
    await store.headPosition({ committed: true }),
  );
};
const recipients = async (query: string, client: ApiClient = acme.test) => {
  await settled();
  return ok(await client.get(`/v1/broadcasts/${broadcastId}/recipients?${query}`));
};
const LOCALS = ['delivered+a', 'bounced+b', 'opened+c', 'clicked+d', 'complained+e', 'delivered+f'];

beforeAll(async () => {
  acme = await svc.createOrg('pro');
  const aud = ok(await acme.test.post('/v1/audiences', { name: 'Readers' }), 201).id;
  for (const local of LOCALS)
    contactIds[local] = ok(
      await acme.test.post('/v1/contacts', { email: `${local}@${SIM}`, audience_ids: [aud] }),
      201,
    ).id;
  const b = ok(
    await acme.test.post('/v1/broadcasts', {
      name: 'News',
      audience_id: aud,
      from: 'Acme <news@acme.test>',
      subject: 'Hello',
      html: '<p><a href="https://acme.test/offer">The offer</a></p>',
    }),
    201,
  );
  broadcastId = b.id;
  ok(await acme.test.post(`/v1/broadcasts/${broadcastId}/send`, {}));
  await new BroadcastExpansionProcess(svc.postline.services).runOnce();
  const simulator = new SimulatorProcess(svc.postline.services);
  await simulator.runOnce();
  for (const ms of [1000, 5000, 60_000]) {
    clock.advance(ms);
    await simulator.runOnce();
  }
  // delivered+f leaves by the one-click link of its email.
  await settled();
  const { rows } = await svc.postline.services.db.query<{ id: string }>(
    `SELECT id FROM emails WHERE broadcast_id = $1 AND recipients->0->>'email' = $2`,
    [broadcastId, `delivered+f@${SIM}`],
  );
  const sent = ok(await acme.test.get(`/v1/emails/${rows[0].id}`));
  const r = await oneClick(unsubscribeLink(sent.headers, svc.baseUrl));
  expect(r.status).toBe(200);
});

const addresses = (list: { data: { email: string }[] }) => list.data.map((r) => r.email.split('@')[0]).sort();

describe('GET /v1/broadcasts/{id}/recipients', () => {
  it('lists the recipients of each type, with what the type tells', async () => {
    expect(addresses(await recipients('type=sent'))).toEqual([...LOCALS].sort());
    expect(addresses(await recipients('type=delivered'))).toEqual(
      ['clicked+d', 'complained+e', 'delivered+a', 'delivered+f', 'opened+c'].sort(),
    );
    expect((await recipients('type=bounced')).data).toEqual([
      {
        id: expect.stringMatching(/^em_/),
        contact_id: contactIds['bounced+b'],
        email: `bounced+b@${SIM}`,
        bounce_type: 'permanent',
      },
    ]);
    expect((await recipients('type=opened')).data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ email: `opened+c@${SIM}`, contact_id: contactIds['opened+c'], count: 1 }),
      ]),
    );
    expect((await recipients('type=clicked')).data).toEqual([
      {
        id: expect.stringMatching(/^em_/),
        contact_id: contactIds['clicked+d'],
        email: `clicked+d@${SIM}`,
        count: 1,
        clicked_links: [{ url: 'https://acme.test/offer', clicks: 1 }],
      },
    ]);
    expect(addresses(await recipients('type=complained'))).toEqual(['complained+e']);
    expect(addresses(await recipients('type=unsubscribed'))).toEqual(['delivered+f']);
  });

  it('filters by address (any letter case) and bounce type, and pages with the email ids', async () => {
    expect(addresses(await recipients(`type=sent&email=DELIVERED%2Ba@${SIM}`))).toEqual(['delivered+a']);
    expect((await recipients('type=bounced&bounce_type=transient')).data).toEqual([]);
    expect((await recipients('type=bounced&bounce_type=permanent')).data).toHaveLength(1);
    const first = await recipients('type=sent&limit=4');
    expect([first.data.length, first.has_more]).toEqual([4, true]);
    const rest = await recipients(`type=sent&limit=4&after=${first.data[3].id}`);
    expect([rest.data.length, rest.has_more]).toEqual([2, false]);
    expect([...first.data, ...rest.data].map((r: any) => r.email).sort()).toEqual(
      LOCALS.map((l) => `${l}@${SIM}`).sort(),
    );
  });

  it.each([
    ['', 'type'],
    ['type=suppressed', 'type'],
    ['type=sent&bounce_type=permanent', 'bounce_type'],
    ['type=bounced&bounce_type=soft', 'bounce_type'],
    ['type=sent&colour=red', 'colour'],
    ['type=sent&email=a%00b', 'query.email'],
    [`type=sent&email=${'a'.repeat(321)}`, 'email'],
  ])('refuses %j with 422 naming %s', async (query, field) => {
    const r = await acme.test.get(`/v1/broadcasts/${broadcastId}/recipients?${query}`);
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.error.message).toContain(`\`${field}`);
  });

  it('answers 404 for a broadcast of another mode or organization', async () => {
    const other = await svc.createOrg('pro');
    for (const client of [acme.live, other.test]) {
      for (const path of ['recipients?type=sent', 'clicked-links']) {
        const r = await client.get(`/v1/broadcasts/${broadcastId}/${path}`);
        expect([r.status, r.body.error.code]).toEqual([404, 'not_found']);
      }
    }
  });
});

describe('GET /v1/broadcasts/{id}/clicked-links', () => {
  it('lists each link once, with its clicks and the emails it was clicked in', async () => {
    await settled();
    expect(ok(await acme.test.get(`/v1/broadcasts/${broadcastId}/clicked-links`))).toEqual({
      object: 'list',
      data: [
        {
          id: expect.stringMatching(/^lnk_[0-9a-f]{32}$/),
          url: 'https://acme.test/offer',
          clicks: 1,
          unique_clicks: 1,
        },
      ],
      has_more: false,
    });
  });

  it('is made again from the clicks’ events alone (projections rebuild email-links)', async () => {
    await settled();
    const before = ok(await acme.test.get(`/v1/broadcasts/${broadcastId}/clicked-links`));
    const { services } = svc.postline;
    const { events } = await rebuildProjection(
      services.db,
      services.store,
      emailLinksProjection,
      services.log,
    );
    expect(events).toBeGreaterThan(0);
    expect(ok(await acme.test.get(`/v1/broadcasts/${broadcastId}/clicked-links`))).toEqual(before);
  });
});
