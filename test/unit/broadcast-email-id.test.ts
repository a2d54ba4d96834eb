import { describe, expect, it } from 'vitest';
import { UnsubscribeTokens } from '../../domain/broadcasts/unsubscribe-token.ts';
import { encodeTime, newId } from '../../platform/ids.ts';
import { broadcastEmailIds } from '../../processes/broadcasts/broadcast-email.ts';
import { importedContactId } from '../../processes/contact-import/contact-import-cursor.ts';
import { unsubscribeMailbox } from '../../write-side/broadcasts/unsubscribe.commands.ts';

const startedAt = '2026-11-29T10:00:00.000Z';
const sorted = (ids: string[]) => [...ids].sort();
const ordered = (broadcastId: string, contactId: string, at = startedAt) =>
  broadcastEmailIds(broadcastId, at, 'contact-ordered')(contactId);

describe("a broadcast email's id", () => {
  it('is the same on every attempt, and differs by contact and by broadcast', () => {
    const contact = newId('con');
    const id = ordered('bc_1', contact);
    expect(ordered('bc_1', contact)).toBe(id);
    expect(ordered('bc_1', newId('con'))).not.toBe(id);
    // Two broadcasts started in the same millisecond.
    expect(ordered('bc_2', contact)).not.toBe(id);
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
    const emails = sorted(contacts).map((c) => ordered('bc_1', c));
    expect(emails).toEqual(sorted(emails));
    expect(new Set(emails).size).toBe(contacts.length);
  });

  it('is time-ordered by the broadcast’s start, like every id', () => {
    const contact = newId('con');
    const earlier = ordered('bc_2', contact, '2026-11-29T09:59:59.999Z');
    expect(earlier < ordered('bc_1', contact)).toBe(true);
    expect(ordered('bc_1', contact)).toMatch(/^em_[0-9a-z]{32}$/);
  });

  it('leaves its unsubscribe token short enough for the local part of the List-Unsubscribe mailto', () => {
    const tokens = new UnsubscribeTokens(Buffer.alloc(32, 7).toString('base64'));
    for (const contact of [newId('con'), importedContactId(newId('imp'), 9_999_999)]) {
      const token = tokens.sign(ordered('bc_1', contact));
      const mailbox = unsubscribeMailbox(token, 'bounces.acme.test');
      expect(mailbox.slice(0, mailbox.indexOf('@')).length).toBeLessThanOrEqual(64);
      expect(tokens.verify(token)).toBe(ordered('bc_1', contact));
    }
  });

  it('keeps the ids of a broadcast started when they were a digest of the broadcast and the contact (`hashed`)', () => {
    // What that version gave: a page done again after an upgrade finds the emails it queued.
    const broadcast = 'bc_01kbx0s4q0000000000000000';
    expect(broadcastEmailIds(broadcast, startedAt, 'hashed')('con_01kbx0a1b2c3d4e5f6g7h8j9k0')).toBe(
      'em_01m8kbyj80nbycfjma0pcqmwps',
    );
    expect(broadcastEmailIds(broadcast, startedAt, 'hashed')('con_01kbx0a1b2c3d4e5f6g7h8j9k00000abc')).toBe(
      'em_01m8kbyj809vvy9j18hx4eez3f',
    );
  });
});
