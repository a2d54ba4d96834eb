import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import { JustQueued } from '../../processes/delivery/just-queued.ts';

const event = (streamId: string, type: string, revision: number): StoredEvent => ({
  streamId,
  type,
  revision,
  position: String(revision),
  data: {},
  metadata: { orgId: 'org', mode: 'live', actor: 'system' },
  createdAt: new Date('2026-11-29T00:00:00Z'),
});

describe('streams of emails just queued, handed from the delivery consumer to its first look', () => {
  it('holds a stream that is its EmailQueued at revision 0, and hands it over once', () => {
    const queued = new JustQueued();
    const first = event('email-a', 'EmailQueued', 0);
    queued.note([first, event('email-b', 'EmailReleased', 1), event('email-c', 'EmailQueued', 2)]);
    expect(queued.take('email-a')).toEqual([first]);
    expect(queued.take('email-a')).toBeUndefined();
    // A released email's stream, or one queued again after other events, is more than the log brought.
    expect(queued.take('email-b')).toBeUndefined();
    expect(queued.take('email-c')).toBeUndefined();
  });

  it('holds at most 5,000 streams: the oldest go first', () => {
    const queued = new JustQueued();
    queued.note(Array.from({ length: 5001 }, (_, i) => event(`email-${i}`, 'EmailQueued', 0)));
    expect(queued.take('email-0')).toBeUndefined();
    expect(queued.take('email-1')).toHaveLength(1);
    expect(queued.take('email-5000')).toHaveLength(1);
  });
});
