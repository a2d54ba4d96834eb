import { describe, expect, it } from 'vitest';
import { DispatchQueue } from '../../processes/webhooks/dispatch-queue.ts';
import type { Claimed } from '../../processes/webhooks/dispatcher.process.ts';

const row = (webhookId: string, id: string) => ({ id, webhook_id: webhookId }) as Claimed;
const takeAll = (q: DispatchQueue) => {
  const out: string[] = [];
  for (let r = q.take(); r; r = q.take()) out.push(r.id);
  return out;
};

describe('dispatch queue', () => {
  it('serves endpoints in turn, each up to its cap of requests in flight', () => {
    const q = new DispatchQueue(2);
    q.push([row('slow', 's1'), row('slow', 's2'), row('slow', 's3'), row('slow', 's4'), row('fast', 'f1')]);
    q.push([row('fast', 'f2'), row('fast', 'f3')]);
    expect(takeAll(q)).toEqual(['s1', 'f1', 's2', 'f2']);
    expect(q.inFlight).toBe(4);
    expect(q.waiting).toBe(3);
    q.done('fast');
    expect(takeAll(q)).toEqual(['f3']);
    q.done('slow');
    expect(takeAll(q)).toEqual(['s3']);
    expect(q.holdings()).toEqual({ webhookIds: ['slow', 'fast'], counts: [3, 2] });
  });

  it('holds room for the fan-out until it settles, within a cap per endpoint', () => {
    const q = new DispatchQueue(1);
    expect(q.reserve('a', 2)).toBe(true);
    expect(q.reserve('a', 2)).toBe(true);
    expect(q.reserve('a', 2)).toBe(false);
    expect(q.held).toBe(2);
    q.unreserve('a');
    q.unreserve('a');
    expect(q.held).toBe(0);
    expect(q.holdings()).toEqual({ webhookIds: [], counts: [] });
  });

  it('gives back what waits', () => {
    const q = new DispatchQueue(1);
    q.push([row('a', 'a1'), row('a', 'a2'), row('b', 'b1')]);
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
});
