import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { expandBroadcast } from '../../processes/broadcasts/broadcast-step.ts';
import { holdRebuild } from '../support/held-rebuild.ts';
import type { ApiClient } from '../support/service.ts';
import { useTwoOrgs } from '../support/service.ts';

/**
 * Read models rebuilt (projections/rebuild.ts) while a broadcast is expanded: the rebuild fills fresh tables while
 * the live ones serve, then swaps them in together with what the live tables took in after its replay's last read.
 * What the broadcast names is there throughout, and the expansion sends to everyone it may.
 */
const clock = new ManualClock('2026-09-01T08:00:00Z');
// Two contacts per step, so that a handful of contacts takes several steps.
const { svc, orgs } = useTwoOrgs(() => ({ clock, env: { BROADCAST_EXPANSION_BATCH: '2' } }));

const ok = <T extends { status: number; body: any }>(r: T, status = 200) => {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
};

/** A broadcast of a published template about an opt-in topic to an audience of `emails`, the first opted out. */
async function broadcastOf(client: ApiClient, emails: string[]) {
  const tpl = ok(
    await client.post('/v1/templates', {
      name: 'Newsletter',
      subject: 'News for {{contact.first_name}}',
      html: '<p>Dear {{contact.first_name}}</p>',
      variables: [{ name: 'contact', type: 'object', required: true }],
    }),
    201,
  );
  ok(await client.post(`/v1/templates/${tpl.id}/publish`, {}));
  const topic = ok(await client.post('/v1/topics', { name: 'News', default_subscription: 'opt_in' }), 201).id;
  const audience = ok(await client.post('/v1/audiences', { name: 'Readers' }), 201).id;
  for (const [i, email] of emails.entries()) {
    const id = ok(
      await client.post('/v1/contacts', { email, first_name: 'Tess', audience_ids: [audience] }),
      201,
    ).id;
    if (i === 0)
      ok(await client.patch(`/v1/contacts/${id}/topics`, [{ topic_id: topic, subscription: 'opt_out' }]));
  }
  const b = ok(
    await client.post('/v1/broadcasts', {
      name: 'September news',
      from: 'Acme <news@acme.test>',
      audience_id: audience,
      topic_id: topic,
      template_id: tpl.id,
    }),
    201,
  );
  ok(await client.post(`/v1/broadcasts/${b.id}/send`, {}));
  return {
    broadcastId: b.id as string,
    templates: tpl.id as string,
    topics: topic as string,
    audiences: audience as string,
  };
}

/** Steps until the broadcast needs none; the emails queued. */
async function expandAll(broadcastId: string) {
  let queued = 0;
  for (let step = 0; step < 20; step++) {
    const r = await expandBroadcast(svc.postline.services, broadcastId);
    queued += r.queued;
    if (!r.next) return queued;
  }
  throw new Error('the broadcast never finished');
}

const progressOf = async (client: ApiClient, broadcastId: string) => {
  const { runner } = svc.postline;
  await runner.caughtUp();
  return ok(await client.get(`/v1/broadcasts/${broadcastId}`));
};

describe('a broadcast expanded while its read models are rebuilt', () => {
  it('sends every contact it may: the live tables serve during the rebuild, the swapped-in ones hold all it names', async () => {
    const client = orgs.acme.test;
    const emails = ['r1@example.org', 'r2@example.org', 'r3@example.org', 'r4@example.org', 'r5@example.org'];
    const { broadcastId } = await broadcastOf(client, emails);
    expect(await expandBroadcast(svc.postline.services, broadcastId)).toMatchObject({ queued: 1 });

    const rebuilds = ['templates', 'topics', 'audiences', 'contacts'].map((name) =>
      holdRebuild(svc.postline, name),
    );
    await Promise.all(rebuilds.map((r) => r.replayed));
    const { rows } = await svc.postline.services.db.query(
      `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'rebuild\\_%' ORDER BY 1`,
    );
    expect(rows.map((r) => r.nspname)).toEqual([
      'rebuild_audiences',
      'rebuild_contacts',
      'rebuild_templates',
      'rebuild_topics',
    ]);
    // A page while all four are under way, the rest after their swaps.
    expect(await expandBroadcast(svc.postline.services, broadcastId)).toMatchObject({ queued: 2 });
    for (const r of rebuilds) await r.swap();
    expect(await expandAll(broadcastId)).toBe(1);

    expect(await progressOf(client, broadcastId)).toMatchObject({
      status: 'sent',
      progress: {
        contacts_processed: 5,
        skipped: { unsubscribed: 0, suppressed: 0, not_subscribed: 1, quota_exceeded: 0, render_failed: 0 },
      },
      counts: { recipients: 4 },
    });
  });

  it.each(['templates', 'topics', 'audiences'] as const)(
    'swaps in a %s read model that holds what the live one took in after the replay, and sends to everyone',
    async (name) => {
      const client = orgs.acme.test;
      const { runner } = svc.postline;
      const rebuild = holdRebuild(svc.postline, name);
      await rebuild.replayed;
      // After the rebuild's replay: in the live tables only, until the swap brings it over.
      const emails = ['w1@example.org', 'w2@example.org', 'w3@example.org'].map((e) => `${name}-${e}`);
      const named = await broadcastOf(client, emails);
      const { broadcastId } = named;
      // The runner stopped: the swapped-in tables are what the swap made of them.
      await runner.stop();
      try {
        await rebuild.swap();
        const { rows } = await svc.postline.services.db.query(`SELECT id FROM ${name} WHERE id = $1`, [
          named[name],
        ]);
        expect(rows).toEqual([{ id: named[name] }]);
      } finally {
        await runner.start();
      }
      await runner.caughtUp();
      expect(await expandAll(broadcastId)).toBe(2);
      expect(await progressOf(client, broadcastId)).toMatchObject({
        status: 'sent',
        progress: { contacts_processed: 3, skipped: { render_failed: 0, not_subscribed: 1 } },
        counts: { recipients: 2 },
      });
    },
  );
});
