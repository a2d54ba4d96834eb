import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobRows, blobRowMigrations } from '../../platform/blob-rows.ts';
import { BlobStore } from '../../platform/blob-store.ts';
import type { Database } from '../../platform/db/database.ts';
import { migrate } from '../../platform/db/migrations.ts';
import { openTestDatabase } from '../support/databases.ts';
import { useTempDir } from '../support/temp-dir.ts';

const dir = useTempDir('blob-rows');
let db: Database;
let dispose: () => Promise<void>;
let store: BlobStore;

beforeAll(async () => {
  ({ db, dispose } = await openTestDatabase());
  await migrate(db, blobRowMigrations);
  store = new BlobStore(dir, Buffer.alloc(32, 7).toString('base64'), new BlobRows(db));
});
afterAll(() => dispose());

const readAll = async (stream: Readable) => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};
const fileOf = (key: string) => join(dir, key.slice(5, 9), key);
const rowCount = async (keys: string[]) =>
  (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM blob_rows WHERE key = ANY($1)', [keys]))
    .rows[0].n;

describe('small blobs as rows of the database', () => {
  it('keeps blobs up to 256 KiB as rows committed before put answers, larger ones as files; reads either', async () => {
    const small = Array.from({ length: 20 }, (_, i) => Buffer.alloc(3000 + i, i));
    const large = Buffer.alloc(300 * 1024, 9);
    // Puts in flight together: they share INSERTs and commits.
    const keys = await Promise.all(small.map((b) => store.put(b)));
    const largeKey = await store.put(large);

    expect(await rowCount(keys)).toBe(20);
    expect(keys.some((k) => existsSync(fileOf(k)))).toBe(false);
    expect(await rowCount([largeKey])).toBe(0);
    expect(existsSync(fileOf(largeKey))).toBe(true);
    for (const [i, key] of keys.entries()) {
      expect((await store.get(key)).equals(small[i])).toBe(true);
      expect((await readAll(store.stream(key))).equals(small[i])).toBe(true);
    }
    expect((await readAll(store.stream(largeKey))).equals(large)).toBe(true);
    expect(await store.exists(keys[0])).toBe(true);
  });

  it('deletes a row as it deletes a file: the bytes are gone, a second delete is no error', async () => {
    const key = await store.put(Buffer.from('forget me'));
    await store.delete(key);
    await store.delete(key);
    expect(await rowCount([key])).toBe(0);
    expect(await store.exists(key)).toBe(false);
    await expect(store.get(key)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(readAll(store.stream(key))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('fails a put whose row cannot be written, and leaves no file', async () => {
    await db.exec('ALTER TABLE blob_rows RENAME TO blob_rows_aside');
    try {
      const blob = await store.writer();
      await blob.write(Buffer.from('not stored'));
      await expect(blob.finish()).rejects.toThrow(/blob_rows/);
      expect(existsSync(fileOf(blob.key))).toBe(false);
    } finally {
      await db.exec('ALTER TABLE blob_rows_aside RENAME TO blob_rows');
    }
  });
});
