import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { SecretBox } from './crypto.ts';
import type { Database } from './db/database.ts';
import type { EventStore, Position } from './eventstore/types.ts';
import type { RateLimiter } from './http/rate-limit.ts';
import type { Logger } from './logger.ts';

/** Read-your-writes: wait until the named projections have applied the event at `position`. */
export interface ReadYourWrites {
  waitFor(projections: string[], position: Position | undefined): Promise<void>;
}

/** A read-model look-up kept in memory until the projection behind it changes (projections/read-model-cache.ts). */
export interface CachedLookup {
  get<T>(key: string, load: () => Promise<T>): Promise<T>;
}

/**
 * The read-model look-ups the write side needs: does this audience exist, what does the API answer once a change
 * is readable. `read-side/` and `write-side/` never import each other, so `write-side/look-ups.ts` declares each
 * member (by augmenting this interface) and the composition root fills it with read-side's query functions
 * (`bin/look-ups.ts`).
 */
// biome-ignore lint/suspicious/noEmptyInterface: declared here, filled in write-side/look-ups.ts
export interface LookUps {}

/** What every route, command handler and process gets: the stores and the ports. Built in bin/. */
export interface Services {
  config: Config;
  db: Database;
  store: EventStore;
  clock: Clock;
  log: Logger;
  secrets: SecretBox;
  readYourWrites: ReadYourWrites;
  /**
   * Look-ups every send makes: API keys (`api_keys`), sending domains (`domains`) and the suppression lists of
   * organizations that have few (`suppressions`).
   */
  caches: { apiKeys: CachedLookup; domains: CachedLookup; suppressions: CachedLookup };
  rateLimiter: RateLimiter;
  lookUps: LookUps;
}
