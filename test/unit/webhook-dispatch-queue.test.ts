import { describe, expect, it } from 'vitest';
import { DispatchQueue } from '../../processes/webhooks/dispatch-queue.ts';

interface Item {
  webhookId: string;
  id: string;
}
const item = (webhookId: string, id: string): Item => ({ webhookId, id });
const queue = (perEndpoint: number) => new DispatchQueue<Item>(perEndpoint, (i) => i.webhookId);
const takeAll = (q: DispatchQueue<Item>) => {
  const out: string[] = [];
  for (let r = q.take(); r; r = q.take()) out.push(r.id);
  return out;
};

describe('dispatch queue (lanes per endpoint)', () => {
  it('serves endpoints in turn, each up to its cap of requests in flight', () => {
    const q = queue(2);
    for (const i of [item('slow', 's1'), item('slow', 's2'), item('slow', 's3'), item('slow', 's4')])
      q.push(i);
    q.push(item('fast', 'f1'));
    q.push(item('fast', 'f2'));
    q.push(item('fast', 'f3'));
    expect(takeAll(q)).toEqual(['s1', 'f1', 's2', 'f2']);
    expect(q.inFlight).toBe(4);
    expect(q.waiting).toBe(3);
    q.done('fast');
    expect(takeAll(q)).toEqual(['f3']);
    q.done('slow');
    expect(takeAll(q)).toEqual(['s3']);
    expect(q.inFlight).toBe(4);
  });

  it('gives back what waits', () => {
    const q = queue(1);
    for (const i of [item('a', 'a1'), item('a', 'a2'), item('b', 'b1')]) q.push(i);
    expect(q.take()?.id).toBe('a1');
    expect(
      q
        .drain()
        .map((r) => r.id)
        .sort(),
    ).toEqual(['a2', 'b1']);
    expect(q.waiting).toBe(0);
    expect(q.take()).toBeUndefined();
  });

  it("takes one endpoint's waiting deliveries out; those in flight stay counted until done", () => {
    const q = queue(1);
    for (const i of [item('a', 'a1'), item('a', 'a2'), item('a', 'a3'), item('b', 'b1')]) q.push(i);
    expect(q.take()?.id).toBe('a1');
    expect(q.keys().sort()).toEqual(['a', 'b']);
    expect(q.remove('a').map((r) => r.id)).toEqual(['a2', 'a3']);
    expect(q.remove('none')).toEqual([]);
    expect(q.keys()).toEqual(['b']);
    expect([q.waiting, q.inFlight]).toEqual([1, 1]);
    expect(takeAll(q)).toEqual(['b1']);
    q.push(item('a', 'a4'));
    expect(takeAll(q)).toEqual([]); // a1 still holds its endpoint's one slot
    q.done('a');
    expect(takeAll(q)).toEqual(['a4']);
    expect([q.waiting, q.inFlight]).toEqual([0, 2]);
  });
});
