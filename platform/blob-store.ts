import { createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import { type FileHandle, mkdir, open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type express from 'express';
import type { BlobRows } from './blob-rows.ts';
import { type BlobWriter, FileBlobWriter } from './blob-writer.ts';
import { purposeKey } from './crypto.ts';
import type { Queryable } from './db/database.ts';
import { AppError } from './errors.ts';
import type { BlobRow } from './eventstore/types.ts';
import { encodeTime, newId } from './ids.ts';
import { blobSyncs } from './metrics.ts';

/**
 * Files (attachments, raw messages) under `POSTLINE_DATA_DIR/blobs`, addressed by a key that names them. The
 * log carries keys, never bytes. Downloads go through Postline itself: a URL signed with a key derived from
 * POSTLINE_SECRET_KEY, valid until it expires, so a link can be handed out without an API key.
 */
async function withFile(path: string, flags: string, use: (file: FileHandle) => Promise<void>) {
  const file = await open(path, flags);
  try {
    await use(file);
  } finally {
    await file.close();
  }
}

/** How long a download link works. */
const DOWNLOAD_URL_TTL_MS = 3600_000;

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException)?.code === 'ENOENT';

/**
 * Small blobs are rows of the database when it is given (`rows`), others files; a key is looked for among the rows
 * this process committed lately (in memory), then as a file, then as a row. Every write is given its time `at` (ms,
 * the service's clock), which its key carries: the sweep of unnamed blobs compares it with the same clock.
 */
export class BlobStore {
  readonly #dir: string;
  readonly #signingKey: KeyObject;
  readonly #rows?: BlobRows;

  constructor(dir: string, secretKeyBase64: string, rows?: BlobRows) {
    this.#dir = dir;
    this.#signingKey = purposeKey(secretKeyBase64, 'postline blob urls');
    this.#rows = rows;
  }

  #path(key: string): string {
    if (!BLOB_KEY.test(key)) throw new Error(`not a blob key: ${key}`);
    return join(this.#dir, key.slice(5, 9), key);
  }

  /**
   * Writes the bytes and returns their key, durably: what an accepted request or message refers to must survive
   * a crash of the machine as its event does. A small blob's row is committed; a file is synced, then its folder
   * (the file's name). A crash before that leaves at most a row or a file that no event names: the caller appends
   * its event only after. Puts in flight together share their commit, or their folder's sync.
   */
  async put(bytes: Buffer, at: number): Promise<string> {
    const blob = await this.writer(at);
    await blob.write(bytes);
    return blob.finish();
  }

  /**
   * A blob to be committed with the events that name it (EventStore.append's `blobs`, then `committed`): its key,
   * and its row when it is small enough for one. A larger one is written and synced here, as `put` does.
   */
  async stage(bytes: Buffer, at: number): Promise<{ key: string; row?: BlobRow }> {
    const blob = await this.writer(at);
    await blob.write(bytes);
    return { key: blob.key, row: await blob.stage() };
  }

  /** Staged rows whose events committed: kept in memory for the reads right after (the delivery's). */
  committed(rows: BlobRow[]): void {
    for (const row of rows) this.#rows?.remember(row);
  }

  /** Writes what `source` yields as a blob, without holding it whole; its key and size once synced. */
  async putStream(source: AsyncIterable<Buffer>, at: number): Promise<{ key: string; size: number }> {
    const blob = await this.writer(at);
    try {
      for await (const chunk of source) await blob.write(chunk);
    } catch (error) {
      await blob.abort();
      throw error;
    }
    return { key: await blob.finish(), size: blob.size };
  }

  /**
   * A blob written piece by piece as its bytes arrive. `finish` syncs it as `put` does and resolves with its
   * key; `abort` removes what was written. One of the two must be called.
   */
  async writer(at: number): Promise<BlobWriter> {
    const key = newId('blob', at);
    const path = this.#path(key);
    const dir = join(path, '..');
    if (!this.#folders.has(dir)) {
      await mkdir(dir, { recursive: true });
      this.#folders.add(dir);
    }
    return new FileBlobWriter(key, path, () => this.#syncFolder(dir), this.#rows);
  }

  /** A blob's bytes as a stream, for readers that need not hold it whole (parsers, uploads). */
  stream(key: string): Readable {
    const path = this.#path(key);
    const row = (error: unknown) => this.#row(key, error);
    return Readable.from(
      (async function* () {
        const file = await open(path, 'r').catch(row);
        if (Buffer.isBuffer(file)) yield file;
        else yield* file.createReadStream();
      })(),
    );
  }

  /** The row of a blob that is no file (`error`, the file's): ENOENT when it is neither. */
  async #row(key: string, error: unknown): Promise<Buffer> {
    const bytes = isMissing(error) ? await this.#rows?.get(key) : undefined;
    if (bytes === undefined) throw error;
    return bytes;
  }

  /** Folders made already (a new one every few days: the folder is named after the key's time). */
  readonly #folders = new Set<string>();

  /** Folders with a sync running, and the one queued after it for the names it may have come too late for. */
  readonly #folderSyncs = new Map<string, { running: Promise<void>; next?: Promise<void> }>();

  /** Resolves once a sync of `dir` that started after this call has finished. */
  #syncFolder(dir: string): Promise<void> {
    const sync = () => {
      blobSyncs.inc({ kind: 'folder' });
      const running = withFile(dir, 'r', (folder) => folder.sync()).finally(() => {
        if (this.#folderSyncs.get(dir)?.running === running) this.#folderSyncs.delete(dir);
      });
      this.#folderSyncs.set(dir, { running });
      return running;
    };
    const current = this.#folderSyncs.get(dir);
    if (!current) return sync();
    // The running sync may have begun before this name was written: the next one, shared, covers it.
    current.next ??= current.running.catch(() => {}).then(sync);
    return current.next;
  }

  get(key: string): Promise<Buffer> {
    const recent = this.#rows?.recent(key);
    if (recent) return Promise.resolve(recent);
    return readFile(this.#path(key)).catch((error) => this.#row(key, error));
  }

  /** Removes a blob; one that is gone already is no error (a purge may run twice). */
  async delete(key: string): Promise<void> {
    await Promise.all([rm(this.#path(key), { force: true }), this.#rows?.delete(key)]);
  }

  /** The blobs `keys` are named by events committed in `tx` (the retention's consumer of the log). */
  async named(tx: Queryable, keys: string[]): Promise<void> {
    await this.#rows?.named(tx, keys);
  }

  /**
   * Deletes blobs written before `before` (ms) that no event has named since (BlobRows.named): what a crash
   * between a blob's commit and its event's left, or a request refused after its blobs were written. Nothing was
   * acknowledged for them and nothing reads them. Resolves with how many it deleted (at most `limit`).
   */
  async sweepUnnamed(before: number, limit: number): Promise<number> {
    const keys = (await this.#rows?.unnamed(`blob_${encodeTime(before)}`, limit)) ?? [];
    for (const key of keys) await this.delete(key);
    return keys.length;
  }

  exists(key: string): Promise<boolean> {
    return this.get(key).then(Boolean, () => false);
  }

  #sign(key: string, expires: number, filename: string, contentType: string) {
    return createHmac('sha256', this.#signingKey)
      .update(`${key}\n${expires}\n${filename}\n${contentType}`)
      .digest('base64url');
  }

  /**
   * A link under `baseUrl` that serves the blob as `filename` with `contentType` for DOWNLOAD_URL_TTL_MS from
   * `now`, and when it expires: the API's `download_url` and `expires_at`.
   */
  downloadLink(baseUrl: string, key: string, o: { filename: string; contentType: string; now: Date }) {
    const expiresAt = new Date(o.now.getTime() + DOWNLOAD_URL_TTL_MS);
    const expires = Math.floor(expiresAt.getTime() / 1000);
    const q = new URLSearchParams({
      expires: String(expires),
      filename: o.filename,
      type: o.contentType,
      sig: this.#sign(key, expires, o.filename, o.contentType),
    });
    return {
      download_url: `${baseUrl.replace(/\/$/, '')}/blobs/${key}?${q}`,
      expires_at: expiresAt.toISOString(),
    };
  }

  /** GET /blobs/:key: checks signature and expiry (against `now`), then streams the file. 404 hides which check failed. */
  mount(app: express.Express, now: () => Date): void {
    app.get('/blobs/:key', async (req, res) => {
      const key = req.params.key;
      const q = req.query as Record<string, string | undefined>;
      const expires = Number(q.expires);
      const { filename = '', type = '', sig = '' } = q;
      const expected = BLOB_KEY.test(key) ? this.#sign(key, expires, filename, type) : '';
      const valid =
        expected !== '' &&
        sig.length === expected.length &&
        timingSafeEqual(Buffer.from(sig), Buffer.from(expected)) &&
        Number.isFinite(expires) &&
        expires * 1000 > now().getTime();
      const bytes = valid ? await this.get(key).catch(() => null) : null;
      if (!bytes) throw new AppError('not_found', 'This download link is invalid or has expired.');
      res.set({
        'Content-Type': type,
        'Content-Disposition': attachmentDisposition(filename),
        'X-Content-Type-Options': 'nosniff',
        // A file opened in the browser after all (an .html attachment) runs nothing and reaches nothing.
        'Content-Security-Policy': "sandbox; default-src 'none'",
        'Cache-Control': 'private, no-store',
      });
      res.send(bytes);
    });
  }
}

const BLOB_KEY = /^blob_[0-9a-z]{26}$/;

/**
 * `Content-Disposition` of a download named `filename` (RFC 6266, its name in RFC 8187's `filename*`): every
 * character outside RFC 8187's attr-char percent-encoded, `'`, `(`, `)` and `*` too, which encodeURIComponent
 * leaves as they are and which end the value early for a strict reader.
 */
export function attachmentDisposition(filename: string): string {
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename*=UTF-8''${encoded}`;
}

/** The blob keys `data` (an event's) holds, at any depth. */
export function blobKeysIn(data: unknown, keys: string[] = []): string[] {
  if (typeof data === 'string') {
    if (data.length === 31 && data.startsWith('blob_') && BLOB_KEY.test(data)) keys.push(data);
  } else if (Array.isArray(data)) {
    for (const item of data) blobKeysIn(item, keys);
  } else if (data !== null && typeof data === 'object') {
    for (const value of Object.values(data)) blobKeysIn(value, keys);
  }
  return keys;
}
