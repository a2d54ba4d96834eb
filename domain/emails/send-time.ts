// English only: the package's root loads every language it knows (about 200 modules more).
import * as chrono from 'chrono-node/en';
import { z } from 'zod';
import { zonedDateTime } from '../../platform/http/route-schema.ts';

const WORDS_MAX_CHARS = 100;
const isoInstant = z.iso.datetime({ offset: true });
/** Whether words are a time does not depend on when they are read: checked against any instant. */
const REFERENCE = new Date('2026-01-01T00:00:00Z');

/** Text that starts as an ISO 8601 date is not words: without its time zone it is refused, not read in UTC. */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}/;

/**
 * A time in English words, as Resend takes them ("in 1 min", "tomorrow at 9am", "Friday at 3pm ET"), read against
 * `now` in UTC unless it names a zone; null unless the words are a time and nothing else ("in 1 hour please" and
 * "in -5 minutes" are not), so that no stray word is silently dropped from a send's time.
 */
export function timeInWords(words: string, now: Date): Date | null {
  const text = words.trim();
  if (text.length === 0 || text.length > WORDS_MAX_CHARS || ISO_DATE.test(text)) return null;
  const [found] = chrono.parse(text, { instant: now, timezone: 0 }, { forwardDate: true });
  return found && found.index === 0 && found.text === text ? found.start.date() : null;
}

export const SEND_TIME_RULE =
  'must be an ISO 8601 date-time with a time zone, or a time in English words such as "in 1 hour" or "tomorrow at 9am" (UTC unless it names a zone)';

/**
 * When to send an email or a broadcast, as a request gives it: ISO 8601 with a time zone (under zonedDateTime's
 * rules), or English words that `timeInWords` reads. Which instant words mean is known only once the request is
 * handled (`sendInstant`).
 */
export const sendTime = z
  .string()
  .superRefine((text, ctx) => {
    if (!isoInstant.safeParse(text).success) {
      if (timeInWords(text, REFERENCE) === null) ctx.addIssue(SEND_TIME_RULE);
      return;
    }
    const iso = zonedDateTime.safeParse(text);
    if (!iso.success) ctx.addIssue(iso.error.issues[0].message);
  })
  .meta({
    description: 'ISO 8601 with a time zone, or English words read in UTC unless they name a zone',
    examples: ['2026-12-24T09:00:00+01:00', 'in 1 hour', 'tomorrow at 9am', 'Friday at 3pm CET'],
  });

/** The instant (ms) a valid send time means when read at `now`. */
export const sendInstant = (sendAt: string, now: Date): number =>
  isoInstant.safeParse(sendAt).success
    ? Date.parse(sendAt)
    : (timeInWords(sendAt, now)?.getTime() ?? Number.NaN);
