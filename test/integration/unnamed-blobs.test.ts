import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { emailStream } from '../../domain/emails/email.events.ts';
import { ManualClock } from '../../platform/clock.ts';
import { RetentionProcess, UNNAMED_BLOB_MS } from '../../processes/retention/retention.process.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

// Ahead of the wall clock, so that the blobs' keys carry this clock's time (ids never go back in time).
const clock = new ManualClock(new Date(Date.now() + 3600_000));
const svc = useTestService({ clock });
let org: TestOrg;
let retention: RetentionProcess;

beforeAll(async () => {
  org = await svc.createOrg('pro');
  retention = new RetentionProcess(svc.postline.services);
});

const LARGE = 300 * 1024;
const unnamed = async () =>
  (
    await svc.postline.services.db.query<{ key: string }>('SELECT key FROM blob_unnamed ORDER BY key')
  ).rows.map((r) => r.key);
const fileOf = (key: string) =>
  join(svc.postline.services.config.POSTLINE_DATA_DIR, 'blobs', key.slice(5, 9), key);
const readable = (key: string) => svc.postline.services.blobs.get(key).then(Boolean, () => false);

/** What a crash between a blob's commit and its event's leaves: blobs that no event names. */
async function orphans(): Promise<string[]> {
  const { blobs } = svc.postline.services;
  const at = clock.now().getTime();
  return [
    await blobs.put(Buffer.from('a row nobody named'), at),
    await blobs.put(Buffer.alloc(LARGE, 1), at),
  ];
}

/** An email with a small and a large attachment: blobs its EmailQueued names. */
async function sentAttachments(): Promise<string[]> {
  const r = await org.test.post('/v1/emails', {
    from: 'Acme <hello@acme.test>',
    to: ['delivered@simulator.postline.dev'],
    subject: 'Files',
    text: 'Two files',
    attachments: [
      { filename: 'small.txt', content: Buffer.from('small').toString('base64') },
      { filename: 'large.bin', content: Buffer.alloc(LARGE, 2).toString('base64') },
    ],
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const [queued] = await svc.postline.services.store.readStream(emailStream(r.body.id));
  return (queued.data as { attachments: { blobKey: string }[] }).attachments.map((a) => a.blobKey);
}

describe('blobs no event names', () => {
  it('are deleted, rows and files, a day after they were written; blobs events name stay', async () => {
    const lost = await orphans();
    const named = await sentAttachments();
    expect(existsSync(fileOf(lost[1]))).toBe(true);
    expect(existsSync(fileOf(named[1]))).toBe(true);
    // Every blob is listed until an event is known to name it.
    expect(await unnamed()).toEqual(expect.arrayContaining([...lost, ...named]));

    clock.advance(UNNAMED_BLOB_MS - 60_000);
    expect(await retention.runOnce()).toBe(0);
    expect(await unnamed()).toEqual(lost);
    expect(await Promise.all(lost.map(readable))).toEqual([true, true]);

    clock.advance(120_000);
    expect(await retention.runOnce()).toBe(2);
    expect(await unnamed()).toEqual([]);
    expect(await Promise.all(lost.map(readable))).toEqual([false, false]);
    expect(existsSync(fileOf(lost[1]))).toBe(false);
    expect(await Promise.all(named.map(readable))).toEqual([true, true]);
    expect(existsSync(fileOf(named[1]))).toBe(true);
    expect(await retention.runOnce()).toBe(0);
  });

  it('are left alone while an event of the retention is parked: it might name them', async () => {
    const { db } = svc.postline.services;
    const lost = await orphans();
    await db.query(
      `INSERT INTO parked_events (consumer, position, stream, type, event, error, next_attempt_at)
       VALUES ('retention', '999999999', 'email-x', 'EmailQueued', '{}', 'test', now() + interval '1 hour')`,
    );
    clock.advance(UNNAMED_BLOB_MS + 60_000);
    expect(await retention.runOnce()).toBe(0);
    expect(await Promise.all(lost.map(readable))).toEqual([true, true]);

    await db.query(`DELETE FROM parked_events WHERE consumer = 'retention'`);
    expect(await retention.runOnce()).toBe(2);
    expect(await Promise.all(lost.map(readable))).toEqual([false, false]);
  });
});
