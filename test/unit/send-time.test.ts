import { describe, expect, it } from 'vitest';
import { SEND_TIME_RULE, sendInstant, sendTime, timeInWords } from '../../domain/emails/send-time.ts';

// Friday, 1 May 2026, 08:00 UTC.
const now = new Date('2026-05-01T08:00:00Z');
const read = (words: string) => timeInWords(words, now)?.toISOString() ?? null;

describe('a send time in words (Resend’s "natural language")', () => {
  it.each([
    ['in 1 min', '2026-05-01T08:01:00.000Z'],
    ['in 30 minutes', '2026-05-01T08:30:00.000Z'],
    ['in an hour', '2026-05-01T09:00:00.000Z'],
    ['in 3 days', '2026-05-04T08:00:00.000Z'],
    ['tomorrow at 9am', '2026-05-02T09:00:00.000Z'],
    ['  tomorrow at 9am ', '2026-05-02T09:00:00.000Z'],
    // A zone it names: Central European time is summer time in May (UTC+2), US Eastern too (UTC−4).
    ['Monday at 3pm CET', '2026-05-04T13:00:00.000Z'],
    ['Friday at 3pm ET', '2026-05-01T19:00:00.000Z'],
    ['May 3 at 10:00 +02:00', '2026-05-03T08:00:00.000Z'],
    // In the past: read, and then refused by send_at's rule of time (email-limits.ts), not as unreadable.
    ['yesterday', '2026-04-30T08:00:00.000Z'],
  ])('reads %j at 2026-05-01T08:00Z as %s', (words, instant) => {
    expect(read(words)).toBe(instant);
  });

  it.each([
    ['words around a time', 'in 1 hour please'],
    ['a negative time', 'in -5 minutes'],
    ['a zone it does not know, dropped', 'Monday 09:00 Europe/Berlin'],
    ['no time at all', 'soon'],
    ['an ISO 8601 date-time without its zone', '2026-05-02T09:00:00'],
    ['nothing', '   '],
    ['more than 100 characters', `in 1 hour${' '.repeat(100)}x`],
  ])('reads nothing from %s', (_, words) => {
    expect(read(words)).toBeNull();
  });
});

describe('send_at in a request', () => {
  it('takes ISO 8601 with a time zone, and words', () => {
    for (const value of ['2026-05-02T09:00:00+02:00', 'in 1 hour', 'tomorrow at 9am'])
      expect(sendTime.parse(value)).toBe(value);
  });

  it('refuses what is neither, saying what it takes', () => {
    for (const value of ['2026-05-02T09:00:00', 'in 1 hour please', '']) {
      const r = sendTime.safeParse(value);
      expect(r.error?.issues.map((i) => i.message)).toEqual([SEND_TIME_RULE]);
    }
  });

  it('keeps the rules of a date-time for ISO 8601: a UTC offset of at most ±15:59', () => {
    expect(sendTime.safeParse('2026-05-02T09:00:00+16:00').error?.issues.map((i) => i.message)).toEqual([
      'must lie in the years 0001 to 9999 (UTC), with a UTC offset of at most ±15:59',
    ]);
  });

  it('means an instant read at the time it is handled', () => {
    expect(sendInstant('2026-05-02T09:00:00+02:00', now)).toBe(Date.parse('2026-05-02T07:00:00Z'));
    expect(sendInstant('in 2 hours', now)).toBe(Date.parse('2026-05-01T10:00:00Z'));
    expect(sendInstant('in 2 hours', new Date('2026-05-01T09:00:00Z'))).toBe(
      Date.parse('2026-05-01T11:00:00Z'),
    );
  });
});
