import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Mailbox, parseMailbox } from '../../domain/emails/addresses.ts';
import { emailStream } from '../../domain/emails/email.events.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { ManualClock } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';
import { acceptEmail } from '../../write-side/emails/accept-email.ts';
import type { EmailDraft } from '../../write-side/emails/email-draft.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

let org: TestOrg;

// The service's clock stands still unless a test moves it: a burst falls into one window of the rate limit.
const clock = new ManualClock(new Date());
const svc = useTestService({ clock, env: { RATE_LIMIT_BATCH_RPS: '2' } });
beforeAll(async () => {
  org = await svc.createOrg('pro');
});

const email = (over: Record<string, unknown> = {}) => ({
  from: 'Acme <hello@acme.test>',
  to: ['delivered@simulator.postline.dev'],
  subject: 'Hi',
  text: 'Hi',
  ...over,
});

describe('hostile input to POST /v1/emails', () => {
  it('refuses over-long addresses before parsing them', async () => {
    for (const field of ['from', 'to', 'cc', 'bcc', 'reply_to']) {
      const long = `a${' '.repeat(40_000)}b`;
      const r = await org.test.post('/v1/emails', email({ [field]: field === 'from' ? long : [long] }));
      expect(r.status, field).toBe(422);
      expect(r.body.error.message).toContain('998');
    }
  });

  it('refuses base64 with a bad character after a long run of spaces', async () => {
    const r = await org.test.post(
      '/v1/emails',
      email({
        attachments: [{ filename: 'a.txt', content: `${' '.repeat(40_000)}!`, content_type: 'text/plain' }],
      }),
    );
    expect(r.status).toBe(422);
    expect(r.body.error.message).toContain('attachments[0].content');
  });

  it('accepts line-wrapped base64', async () => {
    const content = Buffer.from('x'.repeat(200))
      .toString('base64')
      .replace(/(.{76})/g, '$1\r\n');
    const r = await org.test.post(
      '/v1/emails',
      email({ attachments: [{ filename: 'a.txt', content, content_type: 'text/plain' }] }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const list = await org.test.get(`/v1/emails/${r.body.id}/attachments`);
    expect(list.body.data[0].size).toBe(200);
  });
});

describe('POST /v1/emails/batch', () => {
  it('answers an item that failed inside with its own error; the others are accepted', async () => {
    // The blob store cannot write (no folder, no table for small blobs): an item with an attachment fails, one
    // without goes through.
    const blobs = join(svc.postline.services.config.POSTLINE_DATA_DIR, 'blobs');
    const db = svc.postline.services.db;
    rmSync(blobs, { recursive: true, force: true });
    writeFileSync(blobs, 'not a directory');
    await db.exec('ALTER TABLE blob_rows RENAME TO blob_rows_aside');
    try {
      const r = await org.test.post('/v1/emails/batch', [
        email(),
        email({ attachments: [{ filename: 'a.txt', content: 'eA==', content_type: 'text/plain' }] }),
      ]);
      expect(r.status).toBe(200);
      expect(r.body.data[0]).toMatchObject({ status: 'queued' });
      expect(r.body.data[1].error).toMatchObject({ code: 'internal_error', type: 'api_error' });
      expect((await org.test.get(`/v1/emails/${r.body.data[0].id}`)).status).toBe(200);
    } finally {
      await db.exec('ALTER TABLE blob_rows_aside RENAME TO blob_rows');
      rmSync(blobs, { force: true });
    }
  });

  it('allows 2 batch requests a second per organization', async () => {
    clock.advance(1000); // a window of its own: the batch of the test before counted in the last one
    const responses = await Promise.all(
      Array.from({ length: 6 }, () => org.test.post('/v1/emails/batch', [email()])),
    );
    const limited = responses.filter((r) => r.status === 429);
    expect(responses.filter((r) => r.status === 200).length).toBe(2);
    expect(limited.length).toBe(4);
    expect(limited[0].headers['x-ratelimit-limit']).toBe('2');
    expect(Number(limited[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited[0].body.error.code).toBe('rate_limit_exceeded');
  });
});

describe('the acceptance pipeline', () => {
  // Every door refuses unstorable text first in its own terms; the pipeline's step is the last word, for what a
  // door let through (here: a draft handed to it directly).
  const draftOf = (subject: string): EmailDraft => {
    const auth: AuthContext = {
      orgId: org.orgId,
      plan: 'pro',
      mode: 'test',
      keyId: 'key_pipeline',
      permission: 'full_access',
      domainId: null,
    };
    return {
      emailId: newId('em'),
      from: 'Acme <hello@acme.test>',
      to: [parseMailbox('ann@example.org') as Mailbox],
      cc: [],
      bcc: [],
      replyTo: [],
      body: { ready: { subject, html: null, text: 'Hi' } },
      headers: {},
      tags: [],
      attachments: [],
      sender: { key: auth, fromDomain: 'acme.test' },
      quota: async () => {},
    };
  };
  const meta = () => ({ orgId: org.orgId, mode: 'test' as const, actor: 'key_pipeline' });

  it('appends nothing the stores cannot hold, naming the field', async () => {
    const { services } = svc.postline;
    const lone = draftOf('Hi \ud800');
    await expect(acceptEmail(services, meta(), lone)).rejects.toMatchObject({
      code: 'validation_error',
      message: '`subject`: must not contain a lone UTF-16 surrogate or NUL',
    });
    expect(await services.store.readStream(emailStream(lone.emailId))).toEqual([]);
    const fine = draftOf('Hi');
    expect((await acceptEmail(services, meta(), fine)).status).toBe('queued');
    expect((await services.store.readStream(emailStream(fine.emailId))).map((e) => e.type)).toEqual([
      'EmailQueued',
    ]);
  });

  it('takes the quota as of the time the email is accepted at: its month is the one the email counts in', async () => {
    const { services } = svc.postline;
    const taken: Date[] = [];
    const draft = { ...draftOf('Hi'), quota: async (at: Date) => void taken.push(at) };
    await acceptEmail(services, meta(), draft);
    const [queued] = await services.store.readStream(emailStream(draft.emailId));
    expect(taken.map((at) => at.toISOString())).toEqual([(queued.data as { createdAt: string }).createdAt]);
  });
});
