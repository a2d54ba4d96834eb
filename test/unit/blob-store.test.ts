import type { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { attachmentDisposition, BlobStore, blobKeysIn } from '../../platform/blob-store.ts';
import { newId } from '../../platform/ids.ts';
import { useTempDir } from '../support/temp-dir.ts';

const dir = useTempDir('blobs');
const store = new BlobStore(dir, Buffer.alloc(32, 7).toString('base64'));

const readAll = async (stream: Readable) => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

/** `n` bytes that differ from one position to the next, in pieces of `piece`. */
const pieces = (n: number, piece: number) => {
  const bytes = Buffer.alloc(n);
  for (let i = 0; i < n; i++) bytes[i] = (i * 31 + (i >> 8)) & 0xff;
  const out: Buffer[] = [];
  for (let i = 0; i < n; i += piece) out.push(bytes.subarray(i, i + piece));
  return { bytes, out };
};

describe('the blob store', () => {
  it.each([
    ['a small blob, read back from memory', 3000, 700],
    ['a blob larger than what is gathered before writing (1 MB), read back from its file', 3_500_000, 65_536],
  ])(
    'writes %s piece by piece, and reads it back whole while it is still being synced',
    async (_, n, piece) => {
      const { bytes, out } = pieces(n, piece);
      const blob = await store.writer(Date.now());
      for (const chunk of out) await blob.write(chunk);
      const finished = blob.finish();
      // Read before the last pieces are on disk: the reader waits for them.
      const early = await readAll(blob.reader());
      expect(await finished).toBe(blob.key);
      expect(blob.size).toBe(n);
      expect(early.equals(bytes)).toBe(true);
      expect((await store.get(blob.key)).equals(bytes)).toBe(true);
      expect((await readAll(store.stream(blob.key))).equals(bytes)).toBe(true);
    },
  );

  it('leaves nothing of an aborted blob, and deletes a blob once and again without error', async () => {
    const { out } = pieces(2_000_000, 100_000);
    const blob = await store.writer(Date.now());
    for (const chunk of out) await blob.write(chunk);
    await blob.abort();
    expect(await store.exists(blob.key)).toBe(false);
    const key = await store.put(Buffer.from('kept'), Date.now());
    expect(await store.exists(key)).toBe(true);
    await store.delete(key);
    await store.delete(key);
    expect(await store.exists(key)).toBe(false);
  });

  it('puts side by side, each durable and distinct (the folder sync is shared)', async () => {
    const keys = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.put(Buffer.from(`blob ${i}`), Date.now())),
    );
    expect(new Set(keys).size).toBe(20);
    const back = await Promise.all(keys.map((k) => store.get(k)));
    expect(back.map(String)).toEqual(Array.from({ length: 20 }, (_, i) => `blob ${i}`));
  });
});

describe('blobKeysIn', () => {
  it('finds the blob keys an event holds at any depth, and nothing else', () => {
    const [a, b, c] = [newId('blob'), newId('blob'), newId('blob')];
    const data = {
      emailId: newId('em'),
      raw: { blobKey: a, size: 3 },
      attachments: [{ id: newId('att'), blobKey: b }, { filename: 'blob_not-a-key' }],
      nested: [[{ contentKey: c }]],
      text: `see ${a}`,
      n: 5,
      none: null,
    };
    expect(blobKeysIn(data)).toEqual([a, b, c]);
    expect(blobKeysIn({ emailId: 'em_x', to: ['blob_@example.com'] })).toEqual([]);
  });
});

describe('attachmentDisposition', () => {
  it.each([
    ['invoice.pdf', "attachment; filename*=UTF-8''invoice.pdf"],
    ["it's (final)*.pdf", "attachment; filename*=UTF-8''it%27s%20%28final%29%2A.pdf"],
    ['Übersicht 2026.csv', "attachment; filename*=UTF-8''%C3%9Cbersicht%202026.csv"],
  ])('names %j in RFC 8187 form, each character outside attr-char encoded', (name, header) => {
    expect(attachmentDisposition(name)).toBe(header);
    expect(decodeURIComponent(header.split("''")[1])).toBe(name);
  });
});
