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
/** The same blobs as another process sees them: from the database, none of them in its memory. */
let elsewhere: BlobStore;
const secret = Buffer.alloc(32, 7).toString('base64');

beforeAll(async () => {
  ({ db, dispose } = await openTestDatabase());
  await migrate(db, blobRowMigrations);
  store = new BlobStore(dir, secret, new BlobRows(db));
  elsewhere = new BlobStore(dir, secret, new BlobRows(db));
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
    const keys = await Promise.all(small.map((b) => store.put(b, Date.now())));
    const largeKey = await store.put(large, Date.now());

    expect(await rowCount(keys)).toBe(20);
    expect(keys.some((k) => existsSync(fileOf(k)))).toBe(false);
    expect(await rowCount([largeKey])).toBe(0);
    expect(existsSync(fileOf(largeKey))).toBe(true);
    for (const [i, key] of keys.entries()) {
      expect((await elsewhere.get(key)).equals(small[i])).toBe(true);
      expect((await readAll(elsewhere.stream(key))).equals(small[i])).toBe(true);
      expect((await store.get(key)).equals(small[i])).toBe(true);
    }
    expect((await readAll(elsewhere.stream(largeKey))).equals(large)).toBe(true);
    expect((await elsewhere.get(largeKey)).equals(large)).toBe(true);
    expect(await elsewhere.exists(keys[0])).toBe(true);
  });

  it('stages a blob written piece by piece: a small one is a row written by no one yet, a larger one a synced file', async () => {
    const small = await store.writer(Date.now());
    for (const piece of [Buffer.from('Received: '), Buffer.from('by mx\r\n\r\nHi\r\n')])
      await small.write(piece);
    const row = await small.stage();
    expect(row).toEqual({ key: small.key, bytes: Buffer.from('Received: by mx\r\n\r\nHi\r\n') });
    // Read back while staged, from memory; nothing is written until its event commits it, or `finish` does.
    expect((await readAll(small.reader())).toString()).toBe('Received: by mx\r\n\r\nHi\r\n');
    expect(await rowCount([small.key])).toBe(0);
    expect(existsSync(fileOf(small.key))).toBe(false);
    expect(await small.finish()).toBe(small.key);
    expect((await elsewhere.get(small.key)).equals(row!.bytes)).toBe(true);

    const large = await store.writer(Date.now());
    await large.write(Buffer.alloc(300 * 1024, 5));
    expect(await large.stage()).toBeUndefined();
    expect(existsSync(fileOf(large.key))).toBe(true);
    expect(await rowCount([large.key])).toBe(0);
    expect((await elsewhere.get(large.key)).equals(Buffer.alloc(300 * 1024, 5))).toBe(true);
  });

  it('serves the rows it committed lately from memory, up to 8 MiB and for a minute, and forgets what it deletes', async () => {
    let now = Date.now();
    const rows = new BlobRows(db, { now: () => now });
    const local = new BlobStore(dir, secret, rows);
    const first = await local.put(Buffer.from('first'), Date.now());
    // The row is gone behind the process's back: only its memory still has the bytes.
    await db.query('DELETE FROM blob_rows WHERE key = $1', [first]);
    expect((await local.get(first)).toString()).toBe('first');
    await expect(elsewhere.get(first)).rejects.toMatchObject({ code: 'ENOENT' });
    now += 60_001;
    await expect(local.get(first)).rejects.toMatchObject({ code: 'ENOENT' });

    const kept = await local.put(Buffer.from('kept'), Date.now());
    await local.delete(kept);
    expect(rows.recent(kept)).toBeUndefined();

    const older = await local.put(Buffer.alloc(200 * 1024, 1), Date.now());
    const newer: string[] = [];
    for (let i = 0; i < 40; i++) newer.push(await local.put(Buffer.alloc(200 * 1024, 2), Date.now()));
    // 41 × 200 KiB is past 8 MiB: the oldest is pushed out, the 40 newer are kept.
    expect(rows.recent(older)).toBeUndefined();
    for (const key of newer) expect(rows.recent(key)?.length).toBe(200 * 1024);
  });

  it('counts a row it is told of twice once (KurrentDB: its own put, then the commit of its event)', async () => {
    const rows = new BlobRows(db);
    const local = new BlobStore(dir, secret, rows);
    const bytes = Buffer.alloc(200 * 1024, 3);
    const twice = await local.put(bytes, Date.now());
    local.committed([{ key: twice, bytes }]);
    // 40 × 200 KiB is under 8 MiB: all are kept, the one told of twice too.
    const others: string[] = [];
    for (let i = 0; i < 39; i++) others.push(await local.put(Buffer.alloc(200 * 1024, 4), Date.now()));
    expect(rows.recent(twice)).toEqual(bytes);
    for (const key of others) expect(rows.recent(key)?.length).toBe(200 * 1024);
  });

  it('deletes a row as it deletes a file: the bytes are gone, a second delete is no error', async () => {
    const key = await store.put(Buffer.from('forget me'), Date.now());
    await store.delete(key);
    await store.delete(key);
    expect(await rowCount([key])).toBe(0);
    for (const s of [store, elsewhere]) {
      expect(await s.exists(key)).toBe(false);
      await expect(s.get(key)).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(readAll(s.stream(key))).rejects.toMatchObject({ code: 'ENOENT' });
    }
  });

  it('fails a put whose row cannot be written, and leaves no file', async () => {
    await db.exec('ALTER TABLE blob_rows RENAME TO blob_rows_aside');
    try {
      const blob = await store.writer(Date.now());
      await blob.write(Buffer.from('not stored'));
      await expect(blob.finish()).rejects.toThrow(/blob_rows/);
      expect(existsSync(fileOf(blob.key))).toBe(false);
    } finally {
      await db.exec('ALTER TABLE blob_rows_aside RENAME TO blob_rows');
    }
  });
});
