import type { PGlite } from '@electric-sql/pglite';

type Result = { rows: any[]; rowCount: number; command: string };

/**
 * A pg.Pool look-alike over PGlite's single session, so kysely and our SQL code run unchanged on both.
 * A lock hands the session to one user at a time: a transaction keeps it from BEGIN to COMMIT.
 */
export class PGlitePool {
  readonly #pglite: PGlite;
  #tail: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(pglite: PGlite) {
    this.#pglite = pglite;
  }

  async #acquire(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((resolve) => {
      release = resolve;
    });
    const previous = this.#tail;
    this.#tail = previous.then(() => next);
    await previous;
    return release;
  }

  async withLock<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.#acquire();
    try {
      return await fn();
    } finally {
      release();
    }
  }

  async #run(sql: string, params?: unknown[]): Promise<Result> {
    if (this.#closed) throw new Error('database is closed');
    if (!params?.length && sql.includes(';')) {
      const results = await this.#pglite.exec(sql);
      const last = results.at(-1);
      return { rows: last?.rows ?? [], rowCount: last?.affectedRows ?? 0, command: '' };
    }
    const r = await this.#pglite.query(sql, params as any[]);
    return { rows: r.rows, rowCount: r.affectedRows || r.rows.length, command: '' };
  }

  query(sql: string, params?: unknown[]): Promise<Result> {
    return this.withLock(() => this.#run(sql, params));
  }

  async connect() {
    const release = await this.#acquire();
    let released = false;
    return {
      query: (sql: string, params?: unknown[]) => this.#run(sql, params),
      release: () => {
        if (!released) {
          released = true;
          release();
        }
      },
    };
  }

  /** Idempotent: kysely's destroy() ends the pool too. */
  async end(): Promise<void> {
    await this.withLock(async () => {
      if (this.#closed) return;
      this.#closed = true;
      await this.#pglite.close();
    });
  }
}
