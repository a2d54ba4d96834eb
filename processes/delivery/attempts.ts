import { BoundedMap } from '../../platform/bounded-map.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Logger } from '../../platform/logger.ts';

/**
 * The rules of a delivery attempt's record (docs/mta.md, "Attempts, crashes and outages"). An attempt is recorded
 * before it sends (EmailDeliveryAttemptStarted), and the MTA sends nothing of it later than ATTEMPT_LIMIT_MS after
 * that record: no transaction starts later, one still running is cut. `endsBy` in the record adds ATTEMPT_MARGIN_MS (a late
 * timer, the clocks of two machines). After `endsBy`, an attempt without an outcome has an unknown outcome: the
 * process that made it died before it could record it, or it is alive and still trying to record it.
 */
export const ATTEMPT_LIMIT_MS = 30_000;
export const ATTEMPT_MARGIN_MS = 5_000;
/**
 * An attempt whose outcome is unknown is made again only this long after this process first saw it without an
 * outcome (in flight or over): a process alive that holds the outcome in memory writes it within its retry
 * back-off (OUTCOME_RETRY_MAX_MS) of the database coming back, so a second process that could not see the
 * attempt while the database was away does not send again meanwhile.
 */
export const UNKNOWN_GRACE_MS = 3_000;
const OUTCOME_RETRY_FIRST_MS = 100;
const OUTCOME_RETRY_MAX_MS = 1_000;
const MAX_REMEMBERED = 10_000;

/** When this process first saw each attempt without an outcome, by email and start. */
export class UnknownOutcomes {
  readonly #seen = new BoundedMap<string, number>(MAX_REMEMBERED);
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** The earliest the attempt (email, start) may be made again: UNKNOWN_GRACE_MS after this process first saw it. */
  retryAt(emailId: string, startedAt: string): number {
    const key = `${emailId} ${startedAt}`;
    let seen = this.#seen.get(key);
    if (seen === undefined) {
      seen = this.#clock.now().getTime();
      this.#seen.set(key, seen);
    }
    return seen + UNKNOWN_GRACE_MS;
  }

  /** The attempt has been retried: nothing to remember. */
  forget(emailId: string, startedAt: string): void {
    this.#seen.delete(`${emailId} ${startedAt}`);
  }
}

/**
 * Writes what a remote server answered until it is written: an outcome the recipient's server gave is never
 * dropped for a database that is away. `write` is tried again with a back-off (100 ms doubling, at most 1 s)
 * for as long as the process lives; once it stops, until `giveUpAt()` (the end of its shutdown grace), after
 * which `lost` is logged as an error (what could not be written) and the last failure is thrown.
 */
export async function writeUntilWritten<T>(
  o: { log: Logger; emailId: string; giveUpAt: () => number | undefined; lost: () => unknown },
  write: () => Promise<T>,
): Promise<T> {
  for (let failures = 0, wait = OUTCOME_RETRY_FIRST_MS; ; failures++) {
    try {
      const result = await write();
      if (failures > 0) o.log.info({ emailId: o.emailId, tries: failures + 1 }, 'delivery outcomes recorded');
      return result;
    } catch (err) {
      const giveUpAt = o.giveUpAt();
      if (giveUpAt !== undefined && Date.now() + wait >= giveUpAt) {
        o.log.error(
          { err, emailId: o.emailId, outcomes: o.lost() },
          'delivery outcomes could not be recorded before the process stopped; the attempt stays without an outcome',
        );
        throw err;
      }
      // Once, then about every half minute: a failure that does not pass stays visible.
      if (failures % 30 === 0)
        o.log.warn(
          { err, emailId: o.emailId, tries: failures + 1 },
          'could not record delivery outcomes; kept, and tried again',
        );
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, OUTCOME_RETRY_MAX_MS);
    }
  }
}
