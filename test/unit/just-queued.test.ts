import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import { JustQueued } from '../../processes/delivery/just-queued.ts';

const event = (
  streamId: string,
  type: string,
  revision: number,
  html: string | null = null,
): StoredEvent => ({
  streamId,
  type,
  revision,
  position: String(revision),
  data: { html, text: null },
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

  it('holds at most 8 Mi characters of bodies (a larger email is not held) and for a minute', () => {
    let now = 0;
    const queued = new JustQueued({ now: () => now });
    const mib = 'x'.repeat(1024 * 1024);
    queued.note([event('email-huge', 'EmailQueued', 0, mib.repeat(9))]);
    expect(queued.take('email-huge')).toBeUndefined();
    queued.note(Array.from({ length: 9 }, (_, i) => event(`email-${i}`, 'EmailQueued', 0, mib)));
    // 9 MiB and a little: the two oldest go.
    expect(queued.take('email-0')).toBeUndefined();
    expect(queued.take('email-1')).toBeUndefined();
    expect(queued.take('email-2')).toHaveLength(1);
    now = 60_001;
    expect(queued.take('email-3')).toBeUndefined();
    // Noting more lets go of what aged.
    queued.note([event('email-new', 'EmailQueued', 0)]);
    now = 60_002;
    expect(queued.take('email-new')).toHaveLength(1);
  });
});
