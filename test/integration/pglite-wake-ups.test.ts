import { expect, it, vi } from 'vitest';
import { openPGlite } from '../../platform/db/database.ts';
import { PostgresEventStore } from '../../platform/eventstore/postgres/store.ts';
import { START, type StoredEvent } from '../../platform/eventstore/types.ts';
import { PATIENCE } from '../support/patience.ts';
import { startTestService } from '../support/service.ts';

const HOUR = 3_600_000;
const meta = { orgId: 'o', mode: 'test', actor: 't' } as any;

// On PGlite an append in this process wakes the subscribers itself (nothing else would before the poll, an hour
// away here): the main store's after `wakeAfterMs`, the appends in between sharing one wake-up, and a store told
// through `onAppend` (the projection runner's) by its own `wakeSoon`.
it('wakes PGlite subscribers by an in-process append, gathered, and tells the runner store', async () => {
  const db = await openPGlite();
  const runnerStore = new PostgresEventStore(db, { pollMs: HOUR });
  const store = await PostgresEventStore.create(db, {
    pollMs: HOUR,
    wakeAfterMs: 1000,
    onAppend: (position) => runnerStore.wakeSoon(position),
  });
  const batches: string[][] = [];
  const runnerSeen: StoredEvent[] = [];
  const subs = [
    store.subscribe({ from: START }, async (events) => {
      batches.push(events.map((e) => e.streamId));
    }),
    runnerStore.subscribe({ from: START }, async (events) => {
      runnerSeen.push(...events);
    }),
  ];
  try {
    // A first event, read by both: from then on each subscription waits for a wake-up (its own, 1 s after the
    // append, is over before the next appends).
    await store.append('s-0', [{ type: 'T', data: {}, metadata: meta }], { expectedRevision: 'no_stream' });
    await vi.waitFor(() => expect(batches.flat()).toEqual(['s-0']), PATIENCE);
    await vi.waitFor(() => expect(runnerSeen).toHaveLength(1), PATIENCE);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    batches.length = 0;
    runnerSeen.length = 0;
    await store.append('s-1', [{ type: 'T', data: {}, metadata: meta }], { expectedRevision: 'no_stream' });
    await store.append('s-2', [{ type: 'T', data: {}, metadata: meta }], { expectedRevision: 'no_stream' });
    await vi.waitFor(() => expect(runnerSeen.map((e) => e.streamId)).toEqual(['s-1', 's-2']), PATIENCE);
    await vi.waitFor(() => expect(batches.flat()).toEqual(['s-1', 's-2']), PATIENCE);
    // One wake-up for both appends: one read, one batch.
    expect(batches).toEqual([['s-1', 's-2']]);
  } finally {
    await Promise.all(subs.map((s) => s.stop()));
    await store.close();
    await runnerStore.close();
    await db.close();
  }
});

// The embedded service as `npm start` wires it, with the log's poll an hour away: a send is answered (its
// request waited for the `emails` projection, woken through the runner's store) and the simulator, a process
// manager woken by the gathered wake-up, plays its delivery.
it('answers a send and delivers it on PGlite with no poll to fall back on', async () => {
  const svc = await startTestService({ kind: 'pglite', processes: true, env: { LOG_POLL_MS: String(HOUR) } });
  try {
    const org = await svc.createOrg('free');
    const sent = await org.test.post('/v1/emails', {
      from: 'Acme <hello@acme.example>',
      to: ['delivered@simulator.postline.dev'],
      subject: 'Hi',
      text: 'Hi',
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await vi.waitFor(
      async () => expect((await org.test.get(`/v1/emails/${sent.body.id}`)).body.status).toBe('delivered'),
      PATIENCE,
    );
  } finally {
    await svc.close();
  }
});
