import { describe, expect, it } from 'vitest';
import { UnsubscribeTokens } from '../../domain/broadcasts/unsubscribe-token.ts';
import { encodeTime, newId } from '../../platform/ids.ts';
import { broadcastEmailId } from '../../processes/broadcasts/broadcast-email.ts';
import { importedContactId } from '../../processes/contact-import/contact-import-cursor.ts';
import { unsubscribeMailbox } from '../../write-side/broadcasts/unsubscribe.commands.ts';

const startedAt = '2026-11-29T10:00:00.000Z';
const sorted = (ids: string[]) => [...ids].sort();

describe("a broadcast email's id", () => {
  it('is the same on every attempt, and differs by contact and by broadcast', () => {
    const contact = newId('con');
    const id = broadcastEmailId('bc_1', contact, startedAt);
    expect(broadcastEmailId('bc_1', contact, startedAt)).toBe(id);
    expect(broadcastEmailId('bc_1', newId('con'), startedAt)).not.toBe(id);
    // Two broadcasts started in the same millisecond.
    expect(broadcastEmailId('bc_2', contact, startedAt)).not.toBe(id);
  });

  it('sorts as the contacts do, the rows of an import and contacts made in one millisecond too', () => {
    const at = Date.parse('2026-11-01T08:00:00.000Z');
    // As newId makes them: the time, then a random part counted up within one millisecond.
    const made = (prefix: string, ms: number, n = 0) =>
      `${prefix}_${encodeTime(ms)}q7k2m9x4${n.toString(32).padStart(8, '0')}`;
    const rowsOf = (importId: string) =>
      Array.from({ length: 400 }, (_, i) => importedContactId(importId, i * 7));
    const contacts = [
      ...rowsOf(made('imp', at - 60_000)),
      ...Array.from({ length: 50 }, (_, n) => made('con', at, n)),
      ...Array.from({ length: 50 }, (_, i) => made('con', at + i * 1000 + 1)),
      ...rowsOf(made('imp', at + 90_000)),
      ...rowsOf(made('imp', at + 95_000)),
    ];
    const emails = sorted(contacts).map((c) => broadcastEmailId('bc_1', c, startedAt));
    expect(emails).toEqual(sorted(emails));
    expect(new Set(emails).size).toBe(contacts.length);
  });

  it('is time-ordered by the broadcast’s start, like every id', () => {
    const contact = newId('con');
    const earlier = broadcastEmailId('bc_2', contact, '2026-11-29T09:59:59.999Z');
    expect(earlier < broadcastEmailId('bc_1', contact, startedAt)).toBe(true);
    expect(broadcastEmailId('bc_1', contact, startedAt)).toMatch(/^em_[0-9a-z]{32}$/);
  });

  it('leaves its unsubscribe token short enough for the local part of the List-Unsubscribe mailto', () => {
    const tokens = new UnsubscribeTokens(Buffer.alloc(32, 7).toString('base64'));
    for (const contact of [newId('con'), importedContactId(newId('imp'), 9_999_999)]) {
      const token = tokens.sign(broadcastEmailId('bc_1', contact, startedAt));
      const mailbox = unsubscribeMailbox(token, 'bounces.acme.test');
      expect(mailbox.slice(0, mailbox.indexOf('@')).length).toBeLessThanOrEqual(64);
      expect(tokens.verify(token)).toBe(broadcastEmailId('bc_1', contact, startedAt));
    }
  });
});
