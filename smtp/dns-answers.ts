import { BoundedMap } from '../platform/bounded-map.ts';
import { isNoAnswer, type MailauthResolver } from '../platform/dns.ts';

/**
 * How long an answer is kept: Node's resolver gives no TTL for most record types, so a fixed lifetime well under
 * the TTLs senders publish (minutes to hours), which a record change outlives by at most this long.
 */
const ANSWER_MS = 30_000;

/** Names kept at most, the least recently used dropped first. */
const MAX_ANSWERS = 10_000;

interface Kept {
  until: number;
  answer: Promise<unknown>;
}

/** A copy of an answer (arrays, records, strings): a quarter of structuredClone's time, which serializes it. */
const copyOfAnswer = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(copyOfAnswer)
    : value !== null && typeof value === 'object'
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copyOfAnswer(v)]))
      : value;

/**
 * A copy of an error, so that a caller that marks it (mailauth sets `spfResult`) marks only its own: its class,
 * message, code and stack, made without capturing a stack anew (what most of `new Error` costs; a received message
 * meets a few missing records).
 */
function copyOf(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const { message, stack } = error;
  return Object.assign(Object.create(Object.getPrototypeOf(error)), {
    message,
    stack,
    code: (error as NodeJS.ErrnoException).code,
  });
}

/**
 * The inbound checks' look-ups (SPF, DKIM, DMARC, ARC) shared for ANSWER_MS: a stream of mail from one sender asks
 * DNS once, and look-ups in flight are shared. Records and "no such name or record" are kept; any other failure
 * (timeout, SERVFAIL) is not, so the next message asks again. Each caller gets a copy of what was answered.
 */
export function keptAnswers(resolve: MailauthResolver, now: () => number = Date.now): MailauthResolver {
  const kept = new BoundedMap<string, Kept>(MAX_ANSWERS);
  return async (name, rrtype) => {
    const key = `${rrtype} ${name.toLowerCase()}`;
    let entry = kept.get(key);
    if (!entry || entry.until <= now()) {
      const fresh: Kept = { until: now() + ANSWER_MS, answer: resolve(name, rrtype) };
      kept.set(key, fresh);
      fresh.answer.catch((error) => {
        if (!isNoAnswer(error) && kept.get(key) === fresh) kept.delete(key);
      });
      entry = fresh;
    }
    try {
      return copyOfAnswer(await entry.answer);
    } catch (error) {
      throw copyOf(error);
    }
  };
}
