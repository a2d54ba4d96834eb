import type { BlobStore } from './blob-store.ts';
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { SecretBox } from './crypto.ts';
import type { Database } from './db/database.ts';
import type { EventMetadata, EventStore, Position } from './eventstore/types.ts';
import type { RateLimiter } from './http/rate-limit.ts';
import type { IdempotencyKeys } from './idempotency/idempotency.ts';
import type { Logger } from './logger.ts';

/** Read-your-writes: wait until the named projections have applied the event at `position`. */
export interface ReadYourWrites {
  waitFor(projections: string[], position: Position | undefined): Promise<void>;
  /**
   * Writes what the named projections make of `events` (each the first of its stream) before they get to them,
   * as they will find it; false, writing nothing, when one of them cannot (projections/projection.ts).
   */
  writeAhead(projections: string[], events: AppendedEvent[]): Promise<boolean>;
}

/** An event as its write appended it: its type, data and metadata. */
export interface AppendedEvent {
  type: string;
  data: unknown;
  metadata: EventMetadata;
}

/**
 * A read-model look-up that every request shares, built in the composition root with its query: its answers kept
 * in memory until the projection behind it changes (projections/read-model-cache.ts), or the queries of requests
 * in flight together batched into one.
 */
export interface SharedLookup<K extends unknown[], V> {
  get(...key: K): Promise<V>;
}

/**
 * The shared look-ups every send makes (API keys, sending domains, suppressions): declared, with the fields their
 * callers read, in `write-side/look-ups.ts`; built in `bin/caches.ts`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: declared here, filled in write-side/look-ups.ts
export interface Caches {}

/**
 * The signed-token factories (tracking links, unsubscribe links), keyed by the secret key: their classes live
 * in domain/, which this floor cannot name, so `write-side/tokens.ts` declares the members; built in bin/service.ts.
 */
// biome-ignore lint/suspicious/noEmptyInterface: declared here, filled in write-side/tokens.ts
export interface Tokens {}

/**
 * What the operator configured beyond plain settings, checked and parsed once at start-up (bin/service.ts): their
 * types live in domain/, which this floor cannot name, so `write-side/policies.ts` declares the members.
 */
// biome-ignore lint/suspicious/noEmptyInterface: declared here, filled in write-side/policies.ts
export interface Policies {}

/**
 * The read-model look-ups the write side needs: does this audience exist, what does the API answer once a change
 * is readable. `read-side/` and `write-side/` never import each other, so `write-side/look-ups.ts` declares each
 * member (by augmenting this interface) and the composition root fills it with read-side's query functions
 * (`bin/look-ups.ts`).
 */
// biome-ignore lint/suspicious/noEmptyInterface: declared here, filled in write-side/look-ups.ts
export interface LookUps {}

/**
 * What every route, command handler and process gets: the stores, the ports and the shared services, each built
 * once in bin/service.ts. No module looks one of them up by itself (by config, database or store).
 */
export interface Services {
  config: Config;
  db: Database;
  store: EventStore;
  clock: Clock;
  log: Logger;
  /** POSTLINE_SECRET_KEY, or the key generated once into the data dir (platform/secret-key.ts). */
  secretKey: string;
  secrets: SecretBox;
  /** Attachments and raw messages, and their signed download links. */
  blobs: BlobStore;
  tokens: Tokens;
  policies: Policies;
  readYourWrites: ReadYourWrites;
  /** Idempotency-Key claims, with the releases this process owes. */
  idempotency: IdempotencyKeys;
  caches: Caches;
  rateLimiter: RateLimiter;
  lookUps: LookUps;
}
