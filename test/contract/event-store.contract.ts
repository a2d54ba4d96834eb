import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type EventStore,
  type NewEvent,
  START,
  type StoredEvent,
  WrongExpectedRevisionError,
} from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import { PATIENCE_MS } from '../support/patience.ts';

export interface ContractHarness {
  /** A store on a fresh, empty log. `upcasters` are installed on it. */
  open(options?: { upcasters?: Record<string, (e: StoredEvent) => StoredEvent> }): Promise<EventStore>;
  /** Where the blob rows appends carry end up (the blob store's, platform/blob-rows.ts). */
  blobs: { get(key: string): Promise<Buffer | undefined>; unnamed(): Promise<string[]> };
  dispose(): Promise<void>;
}

const meta = { orgId: 'org_1', mode: 'test' as const, actor: 'test' };
const ev = (type: string, data: unknown = {}): NewEvent => ({ type, data, metadata: meta });
let n = 0;
const stream = (name: string) => `${name}-${Date.now()}-${n++}`;
/** The counter most test events carry (`ev('A', { i: 0 })`). */
const iOf = (e: StoredEvent) => (e.data as { i: number }).i;

/**
 * Waits until readers of the global log can see `position`. On PostgreSQL a transaction still running anywhere
 * in the cluster (other test files share it) holds later commits back from readers for a moment.
 */
async function untilVisible(store: EventStore, position: string) {
  const deadline = Date.now() + PATIENCE_MS;
  while ((await store.headPosition()) < position) {
    if (Date.now() > deadline) throw new Error(`position ${position} never became visible`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The contract every event store adapter must keep. Run once per adapter. */
export function eventStoreContract(name: string, makeHarness: () => Promise<ContractHarness>) {
  describe(`event store contract: ${name}`, () => {
    let harness: ContractHarness;
    let store: EventStore;
    beforeAll(async () => {
      harness = await makeHarness();
      store = await harness.open({
        upcasters: {
          OldShape: (e) => ({
            ...e,
            type: 'NewShape',
            data: { value: (e.data as { v: number }).v, upcasted: true },
          }),
        },
      });
    });
    afterAll(async () => {
      await store?.close();
      await harness?.dispose();
    });

    it('appends to a new stream with no_stream and reads it back in order', async () => {
      const s = stream('order');
      const r = await store.append(s, [ev('A', { i: 0 }), ev('B', { i: 1 })], {
        expectedRevision: 'no_stream',
      });
      expect(r.nextRevision).toBe(1);
      const events = await store.readStream(s);
      expect(events.map((e) => [e.type, e.revision, iOf(e)])).toEqual([
        ['A', 0, 0],
        ['B', 1, 1],
      ]);
      expect(events[0].metadata).toEqual(meta);
      expect(events[1].position).toBe(r.position);
      expect(events[0].createdAt).toBeInstanceOf(Date);
    });

    it('rejects no_stream on an existing stream with a typed conflict', async () => {
      const s = stream('exists');
      await store.append(s, [ev('A')], { expectedRevision: 'no_stream' });
      const error = await store.append(s, [ev('B')], { expectedRevision: 'no_stream' }).catch((e) => e);
      expect(error).toBeInstanceOf(WrongExpectedRevisionError);
      expect(error.actual).toBe(0);
    });

    it('checks stream_exists', async () => {
      const s = stream('se');
      const error = await store.append(s, [ev('A')], { expectedRevision: 'stream_exists' }).catch((e) => e);
      expect(error).toBeInstanceOf(WrongExpectedRevisionError);
      expect(error.actual).toBe('no_stream');
      await store.append(s, [ev('A')], { expectedRevision: 'no_stream' });
      const r = await store.append(s, [ev('B')], { expectedRevision: 'stream_exists' });
      expect(r.nextRevision).toBe(1);
    });

    it('checks an exact revision', async () => {
      const s = stream('exact');
      await store.append(s, [ev('A'), ev('B')], { expectedRevision: 'no_stream' });
      const stale = await store.append(s, [ev('C')], { expectedRevision: 0 }).catch((e) => e);
      expect(stale).toBeInstanceOf(WrongExpectedRevisionError);
      expect(stale.actual).toBe(1);
      expect((await store.append(s, [ev('C')], { expectedRevision: 1 })).nextRevision).toBe(2);
    });

    it('lets exactly one of two racing writers with the same expected revision win', async () => {
      const s = stream('race');
      await store.append(s, [ev('A')], { expectedRevision: 'no_stream' });
      const results = await Promise.allSettled([
        store.append(s, [ev('B1')], { expectedRevision: 0 }),
        store.append(s, [ev('B2')], { expectedRevision: 0 }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(rejected.reason).toBeInstanceOf(WrongExpectedRevisionError);
      expect(await store.readStream(s)).toHaveLength(2);
    });

    it('settles concurrent appends to many streams each on its own: successes, conflicts and positions', async () => {
      const existing = stream('many-existing');
      await store.append(existing, [ev('A'), ev('B')], { expectedRevision: 'no_stream' });
      const fresh = Array.from({ length: 40 }, (_, i) => stream(`many-${i}`));
      const results = await Promise.allSettled([
        ...fresh.map((s, i) =>
          store.append(s, i % 2 ? [ev('X', { i })] : [ev('X', { i }), ev('Y', { i })], {
            expectedRevision: 'no_stream',
          }),
        ),
        store.append(existing, [ev('C')], { expectedRevision: 'no_stream' }), // conflict: it exists
        store.append(existing, [ev('C')], { expectedRevision: 5 }), // conflict: not that far yet
        store.append(existing, [ev('C')], { expectedRevision: 1 }), // fits
      ]);
      const ok = results.slice(0, 40).map((r) => (r as PromiseFulfilledResult<any>).value);
      expect(ok.map((r) => r.nextRevision)).toEqual(fresh.map((_, i) => (i % 2 ? 0 : 1)));
      for (const [i, r] of results.slice(40, 42).entries()) {
        expect(r.status, `conflict ${i}`).toBe('rejected');
        expect((r as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedRevisionError);
      }
      expect(results[42].status).toBe('fulfilled');
      for (const [i, s] of fresh.entries()) {
        const events = await store.readStream(s);
        expect(events.map((e) => [e.type, e.revision, iOf(e)])).toEqual(
          i % 2
            ? [['X', 0, i]]
            : [
                ['X', 0, i],
                ['Y', 1, i],
              ],
        );
        expect(events.at(-1)?.position).toBe(ok[i].position);
      }
      expect((await store.readStream(existing)).map((e) => e.type)).toEqual(['A', 'B', 'C']);
    });

    it('keeps every character of data and metadata appended together, separators and escapes too', async () => {
      const texts = ['a\u001eb', 'line\nbreak "quoted" \\ back', '\u0000 nul \u2028 ü 😀', '', '\u001e'];
      const streams = texts.map((_, i) => stream(`chars-${i}`));
      await Promise.all(
        texts.map((text, i) =>
          store.append(streams[i], [{ type: 'T', data: { text, i }, metadata: { ...meta, actor: text } }], {
            expectedRevision: 'no_stream',
          }),
        ),
      );
      for (const [i, text] of texts.entries()) {
        const [event] = await store.readStream(streams[i]);
        expect([event.data, event.metadata.actor]).toEqual([{ text, i }, text]);
      }
    });

    it('lets exactly one of many racing writers to one stream win, among appends to other streams', async () => {
      const s = stream('race-many');
      const others = Array.from({ length: 10 }, (_, i) => stream(`race-other-${i}`));
      const results = await Promise.allSettled([
        ...Array.from({ length: 5 }, (_, i) =>
          store.append(s, [ev('W', { i })], { expectedRevision: 'no_stream' }),
        ),
        ...others.map((o) => store.append(o, [ev('O')], { expectedRevision: 'no_stream' })),
      ]);
      expect(results.slice(0, 5).filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect(results.slice(5).every((r) => r.status === 'fulfilled')).toBe(true);
      expect(await store.readStream(s)).toHaveLength(1);
    });

    it('stores the blobs an append carries with its events, each listed as unnamed', async () => {
      const blob = (bytes: Buffer) => ({ key: newId('blob'), bytes });
      const carried = Array.from({ length: 12 }, (_, i) => [
        blob(Buffer.from(`message ${i}`)),
        blob(Buffer.alloc(3000, i)),
      ]);
      const streams = carried.map((_, i) => stream(`blobs-${i}`));
      // Together, as concurrent messages are: an exact append each, and one with `any`.
      await Promise.all(
        carried.map((blobs, i) =>
          store.append(streams[i], [ev('Message', { keys: blobs.map((b) => b.key) })], {
            expectedRevision: i === 0 ? 'any' : 'no_stream',
            blobs,
          }),
        ),
      );
      const all = carried.flat();
      expect(await Promise.all(all.map((b) => harness.blobs.get(b.key)))).toEqual(all.map((b) => b.bytes));
      expect(await harness.blobs.unnamed()).toEqual(expect.arrayContaining(all.map((b) => b.key)));
      expect(((await store.readStream(streams[3]))[0].data as { keys: string[] }).keys).toEqual(
        carried[3].map((b) => b.key),
      );
    });

    it("keeps a refused append's blobs only where they can be swept: listed as unnamed", async () => {
      const s = stream('blobs-refused');
      await store.append(s, [ev('A')], { expectedRevision: 'no_stream' });
      const refused = [
        { expectedRevision: 'no_stream' as const, blobs: [{ key: newId('blob'), bytes: Buffer.from('a') }] },
        { expectedRevision: 4, blobs: [{ key: newId('blob'), bytes: Buffer.from('b') }] },
      ];
      for (const options of refused) {
        const error = await store.append(s, [ev('B')], options).catch((e) => e);
        expect(error).toBeInstanceOf(WrongExpectedRevisionError);
      }
      const unnamed = await harness.blobs.unnamed();
      for (const { key } of refused.flatMap((o) => o.blobs))
        if ((await harness.blobs.get(key)) !== undefined) expect(unnamed).toContain(key);
      expect((await store.readStream(s)).map((e) => e.type)).toEqual(['A']);
    });

    it('appends with any, concurrently, without losing an event', async () => {
      const s = stream('any');
      await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.append(s, [ev('X', { i })], { expectedRevision: 'any' })),
      );
      const events = await store.readStream(s);
      expect(events.map((e) => e.revision)).toEqual([...Array(10).keys()]);
    });

    it('reads an unknown stream as empty', async () => {
      expect(await store.readStream(stream('none'))).toEqual([]);
    });

    it('reads all events in global order, in pages', async () => {
      const s = stream('all');
      // Committed, not visible: the visible head may lag (a transaction elsewhere in the cluster), and pages
      // from there would start with earlier tests' events.
      const before = await store.headPosition({ committed: true });
      let last = '';
      for (let i = 0; i < 5; i++)
        last = (await store.append(s, [ev('P', { i })], { expectedRevision: 'any' })).position;
      await untilVisible(store, last);
      const page1 = await store.readAll({ from: before, limit: 3 });
      const page2 = await store.readAll({ from: page1[2].position, limit: 3 });
      const mine = [...page1, ...page2].filter((e) => e.streamId === s);
      expect(mine.map((e) => iOf(e))).toEqual([0, 1, 2, 3, 4]);
      const positions = [...page1, ...page2].map((e) => e.position);
      expect([...positions].sort()).toEqual(positions);
      expect(await store.headPosition()).toBe(page2.at(-1)?.position);
    });

    it('keeps many events appended at once in order in the global log, skipping none', async () => {
      // Enough to cross a power of ten in a young log, in pages: positions must order as numbers, not as digits.
      const s = stream('many');
      const before = await store.headPosition();
      const { position } = await store.append(
        s,
        Array.from({ length: 150 }, (_, i) => ev('M', { i })),
        { expectedRevision: 'no_stream' },
      );
      await untilVisible(store, position);
      const seen: number[] = [];
      for (let from = before; ; ) {
        const page = await store.readAll({ from, limit: 40 });
        if (page.length === 0) break;
        for (const e of page) if (e.streamId === s) seen.push(iOf(e));
        from = page[page.length - 1].position;
      }
      expect(seen).toEqual([...Array(150).keys()]);
      expect(await store.headPosition()).toBe((await store.readStream(s)).at(-1)?.position);
    });

    it('upcasts old event shapes on read', async () => {
      const s = stream('up');
      const { position } = await store.append(s, [ev('OldShape', { v: 7 })], {
        expectedRevision: 'no_stream',
      });
      await untilVisible(store, position);
      const [e] = await store.readStream(s);
      expect(e.type).toBe('NewShape');
      expect(e.data).toEqual({ value: 7, upcasted: true });
      const all = await store.readAll({ from: START, limit: 10_000 });
      expect(all.find((x) => x.streamId === s)?.type).toBe('NewShape');
    });

    it('subscribes from a checkpoint: catch-up, then live', async () => {
      const s = stream('sub');
      await store.append(s, [ev('E', { i: 0 }), ev('E', { i: 1 })], { expectedRevision: 'no_stream' });
      const [first] = await store.readStream(s);
      const seen: number[] = [];
      const sub = store.subscribe({ from: first.position }, async (events) => {
        for (const e of events) if (e.streamId === s) seen.push(iOf(e));
      });
      await sub.caughtUp();
      expect(seen).toEqual([1]);
      await store.append(s, [ev('E', { i: 2 })], { expectedRevision: 1 });
      await sub.caughtUp();
      expect(seen).toEqual([1, 2]);
      await sub.stop();
    });

    it('follows a checkpoint the consumer keeps, and starts again where it moved (a rebuild)', async () => {
      const s = stream('checkpoint');
      let checkpoint = await store.headPosition();
      const seen: number[] = [];
      const sub = store.subscribe({ from: async () => checkpoint }, async (events) => {
        for (const e of events) if (e.streamId === s) seen.push(iOf(e));
        checkpoint = events[events.length - 1].position;
      });
      await store.append(s, [ev('E', { i: 0 }), ev('E', { i: 1 })], { expectedRevision: 'no_stream' });
      await sub.caughtUp();
      expect(seen).toEqual([0, 1]);
      const [first] = await store.readStream(s);
      checkpoint = first.position;
      await store.append(s, [ev('E', { i: 2 })], { expectedRevision: 1 });
      await sub.caughtUp();
      expect(seen).toEqual([0, 1, 1, 2]);
      await sub.stop();
    });

    it('retries a batch whose handler failed, so nothing is skipped', async () => {
      const s = stream('retry');
      const from = await store.headPosition();
      await store.append(s, [ev('E', { i: 0 })], { expectedRevision: 'no_stream' });
      let calls = 0;
      const seen: number[] = [];
      const sub = store.subscribe({ from }, async (events) => {
        if (calls++ === 0) throw new Error('transient');
        for (const e of events) if (e.streamId === s) seen.push(iOf(e));
      });
      await sub.caughtUp();
      expect(calls).toBeGreaterThanOrEqual(2);
      expect(seen).toEqual([0]);
      await sub.stop();
    });
  });
}
