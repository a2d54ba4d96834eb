import type { Server } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../errors.ts';

/**
 * Graceful shutdown of the HTTP server. While draining, the server still listens, but every new request (`/readyz`
 * included, so a load balancer stops sending any) is answered 503 `shutting_down` with `Retry-After` and its
 * connection closed; requests in flight finish and close their connections after answering. Once none is left,
 * or the grace period is over, the server stops listening and every connection is closed.
 */
export class HttpDrain {
  #draining = false;
  /** Responses of requests in flight (not yet answered). */
  readonly #open = new Set<Response>();
  #allAnswered?: () => void;

  /** Mounted first: tracks requests in flight, and turns new ones away while draining. */
  readonly middleware = (_req: Request, res: Response, next: NextFunction): void => {
    if (this.#draining) {
      res.set('Connection', 'close');
      throw new AppError('shutting_down', 'This server is shutting down; send the request again.', {
        'Retry-After': '1',
      });
    }
    this.#open.add(res);
    res.on('close', () => {
      this.#open.delete(res);
      if (this.#open.size === 0) this.#allAnswered?.();
    });
    next();
  };

  /** Turns new requests away, waits for those in flight (at most `graceMs`), then closes the server. */
  async drain(server: Server, graceMs: number): Promise<void> {
    this.#draining = true;
    // Keep-alive connections end with the answer they are waiting for; idle ones end now.
    for (const res of this.#open) if (!res.headersSent) res.setHeader('Connection', 'close');
    server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    if (this.#open.size > 0)
      await new Promise<void>((resolve) => {
        this.#allAnswered = resolve;
        timer = setTimeout(resolve, graceMs);
      });
    clearTimeout(timer);
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }
}
