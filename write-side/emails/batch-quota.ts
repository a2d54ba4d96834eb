import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { AppError } from '../../platform/errors.ts';
import type { Services } from '../../platform/services.ts';
import { consumeQuota, monthUsedUp } from './quota.commands.ts';

/** What stops the whole batch: a failure that is no item's own (the quota's store, a look-up). */
export class BatchFailed extends Error {
  readonly reason: unknown;
  constructor(reason: unknown) {
    super('batch failed');
    this.reason = reason;
  }
}

type Arrival = 'take' | 'done' | 'skip';

/** A strict batch's refusal: its first refused item's error, naming the item. */
const wholeBatchRefused = (i: number, error: AppError) =>
  new AppError(
    error.code,
    error.message.startsWith(`\`body[${i}]\``) ? error.message : `\`body[${i}]\`: ${error.message}`,
    error.headers,
  );

/**
 * The quota of a batch, asked once for the whole request when every item has arrived at its quota step (`take`),
 * was accepted by an earlier attempt (`done`, counted against that attempt's grant) or was refused before
 * (`skip`). Items that take share the grant in input order; those beyond it get `monthly_quota_exceeded`. A
 * `strict` batch (Resend's `x-batch-validation: strict`) is all or nothing: an item refused before its quota step
 * refuses the whole batch (`refusal`), and the quota grants every item or none.
 */
export class BatchQuota {
  readonly #arrivals: (Arrival | undefined)[];
  #left: number;
  #granted?: Promise<number>;
  #open!: () => void;
  #fail!: (failure: BatchFailed) => void;
  readonly #opened = new Promise<void>((resolve, reject) => {
    this.#open = resolve;
    this.#fail = reject;
  });
  #failure?: BatchFailed;
  readonly #refused = new Map<number, AppError>();
  /** A strict batch's refusal, once every item has arrived and one was refused. */
  refusal?: AppError;

  readonly services: Services;
  readonly auth: AuthContext;
  /** The request's first chosen id, under which a repeated attempt gets its grant again. */
  readonly request?: string;
  readonly strict: boolean;

  /** When the batch's emails are accepted: its grant is of that month's quota. */
  readonly at: Date;

  constructor(
    services: Services,
    auth: AuthContext,
    size: number,
    at: Date,
    o: { request?: string; strict?: boolean } = {},
  ) {
    this.services = services;
    this.auth = auth;
    this.at = at;
    this.request = o.request;
    this.strict = o.strict ?? false;
    this.#arrivals = new Array(size);
    this.#left = size;
    this.#opened.catch(() => {}); // each taker awaits it; a failure with no taker left is no unhandled one
  }

  /** Item `i`'s quota step: resolves when the batch's grant covers it. */
  async take(i: number): Promise<void> {
    this.arrive(i, 'take');
    await this.#opened;
    const granted = await this.#granted!;
    const done = this.#arrivals.filter((a) => a === 'done').length;
    const before = this.#arrivals.slice(0, i).filter((a) => a === 'take').length;
    if (done + before >= granted) throw monthUsedUp(this.auth, this.at);
  }

  /**
   * Item `i` did not reach its quota step: `refused` with its own error, or stopped by a `failure` that is no
   * item's own, which stops the batch.
   */
  arrive(i: number, arrival: Arrival, failure?: unknown, refused?: AppError): void {
    if (this.#arrivals[i] !== undefined) return;
    this.#arrivals[i] = arrival;
    if (refused) this.#refused.set(i, refused);
    if (failure !== undefined) this.#failure ??= new BatchFailed(failure);
    if (--this.#left > 0) return;
    if (this.strict && this.#refused.size > 0) {
      const first = Math.min(...this.#refused.keys());
      this.refusal = wholeBatchRefused(first, this.#refused.get(first)!);
      this.#failure ??= new BatchFailed(this.refusal);
    }
    if (this.#failure) {
      this.#fail(this.#failure);
      return;
    }
    this.#granted = this.#grant();
    this.#open();
  }

  async #grant(): Promise<number> {
    const done = this.#arrivals.filter((a) => a === 'done').length;
    const valid = this.#arrivals.filter((a) => a === 'take').length;
    if (valid === 0) return 0;
    try {
      return await consumeQuota(this.services, this.auth, done + valid, this.at, this.request, this.strict);
    } catch (error) {
      if (this.strict || !(error instanceof AppError) || error.code !== 'monthly_quota_exceeded')
        throw new BatchFailed(error);
      return 0;
    }
  }
}
