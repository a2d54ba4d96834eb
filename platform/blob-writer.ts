import { createReadStream } from 'node:fs';
import { type FileHandle, open, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { BlobRows } from './blob-rows.ts';
import type { BlobRow } from './eventstore/types.ts';
import { blobSyncs } from './metrics.ts';

/**
 * One blob written as its bytes arrive (blob-store.ts): held in memory while it is small, then a row of the
 * database (blob-rows.ts), or else a file written in place and synced.
 */
export interface BlobWriter {
  readonly key: string;
  /** Bytes written so far. */
  readonly size: number;
  write(chunk: Buffer): Promise<void>;
  finish(): Promise<string>;
  /**
   * Ends the blob for the events that name it to commit (EventStore.append's `blobs`): a small one's row, written
   * by whoever commits it (or by `finish` after all); a larger one is synced here, as `finish` does (undefined).
   */
  stage(): Promise<BlobRow | undefined>;
  abort(): Promise<void>;
  /** The bytes written, to read again once `finish` began: from memory while the blob is small, else its file. */
  reader(): Readable;
}

/** Pieces are gathered up to this many bytes before they go to the file; a smaller blob is written once. */
const FLUSH_BYTES = 1024 * 1024;

/** A blob held whole up to this size goes to the database's rows (blob-rows.ts) rather than a file. */
const ROW_BYTES = 256 * 1024;

/** Whether a blob of `size` bytes is a row of the database (with rows to write to), not a file. */
const fitsInRow = (size: number) => size <= ROW_BYTES;

export class FileBlobWriter implements BlobWriter {
  readonly key: string;
  size = 0;
  readonly #path: string;
  readonly #syncFolder: () => Promise<void>;
  readonly #rows?: BlobRows;
  #file?: FileHandle;
  #pending: Buffer[] = [];
  #pendingSize = 0;
  /** The whole blob, when it never outgrew the gathered pieces. */
  #held?: Buffer;
  /** The last pieces written to the file, once `finish` began. */
  #written?: Promise<void>;

  constructor(key: string, path: string, syncFolder: () => Promise<void>, rows?: BlobRows) {
    this.key = key;
    this.#path = path;
    this.#syncFolder = syncFolder;
    this.#rows = rows;
  }

  async write(chunk: Buffer): Promise<void> {
    this.#pending.push(chunk);
    this.#pendingSize += chunk.length;
    this.size += chunk.length;
    if (this.#pendingSize >= FLUSH_BYTES) await this.#flush();
  }

  async #flush(): Promise<void> {
    if (!this.#file) {
      // Listed before the file exists, so that a crash never leaves a file the sweep does not know of.
      await this.#rows?.listUnnamed(this.key);
      this.#file = await open(this.#path, 'wx');
    }
    let buffers = this.#pending;
    this.#pending = [];
    this.#pendingSize = 0;
    while (buffers.length > 0) {
      let written = (await this.#file.writev(buffers)).bytesWritten;
      // A short write leaves the rest of the buffers, the first of them cut, for another round.
      while (buffers.length > 0 && written >= buffers[0].length) written -= buffers.shift()!.length;
      if (buffers.length > 0) buffers = [buffers[0].subarray(written), ...buffers.slice(1)];
    }
  }

  /** The blob as a row of the database, when it never went to a file and is small enough for one. */
  #row(): BlobRow | undefined {
    if (!this.#file) this.#held ??= Buffer.concat(this.#pending);
    return this.#held && this.#rows && fitsInRow(this.#held.length)
      ? { key: this.key, bytes: this.#held }
      : undefined;
  }

  async stage(): Promise<BlobRow | undefined> {
    const row = this.#row();
    if (!row) await this.finish();
    return row;
  }

  async finish(): Promise<string> {
    const row = this.#row();
    if (row) {
      this.#pending = [];
      await this.#rows!.put(row.key, row.bytes);
      return this.key;
    }
    this.#written = this.#flush();
    await this.#written;
    try {
      blobSyncs.inc({ kind: 'file' });
      await this.#file!.sync();
    } finally {
      await this.#file!.close();
    }
    await this.#syncFolder();
    return this.key;
  }

  async abort(): Promise<void> {
    this.#pending = [];
    if (!this.#file) return;
    await this.#file.close().catch(() => {});
    await rm(this.#path, { force: true });
  }

  /** Call it once `finish` began: a reader of the file waits for the last pieces to be written. */
  reader(): Readable {
    if (this.#held) return Readable.from([this.#held]);
    const written = this.#written ?? Promise.resolve();
    const path = this.#path;
    return Readable.from(
      (async function* () {
        await written;
        yield* createReadStream(path);
      })(),
    );
  }
}
