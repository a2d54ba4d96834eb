import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { type TestOrg, useTestService } from '../support/service.ts';
import { expectValidationErrors } from '../support/validation.ts';

let org: TestOrg;
const clock = new ManualClock(new Date('2026-03-10T12:00:00Z'));
const svc = useTestService({ clock });
beforeAll(async () => {
  org = await svc.createOrg('pro');
});

const email = (over: Record<string, unknown> = {}) => ({
  from: 'Acme <hello@acme.test>',
  to: ['ann@example.org'],
  subject: 'Hi',
  text: 'Hi',
  ...over,
});
const send = (body: unknown) => org.test.post('/v1/emails', body);
const attach = (content: string) => email({ attachments: [{ filename: 'a.txt', content }] });

describe('attachments: content must be base64', () => {
  it('refuses content that is no complete base64, rather than keeping part of it', async () => {
    await expectValidationErrors(send, [
      [attach('A'), 'attachments[0].content'],
      [attach('aGk=A'), 'attachments[0].content'],
      [attach('aGVsbG8hA'), 'attachments[0].content'],
      [attach('aGk=='), 'attachments[0].content'],
      [attach('='), 'attachments[0].content'],
      [attach(' \r\n '), 'attachments[0].content'],
      [attach('aG!k'), 'attachments[0].content'],
      [attach('aGk\u00e9'), 'attachments[0].content'],
    ]);
  });

  it('accepts padded and unpadded base64 alike', async () => {
    for (const content of ['aGk=', 'aGk', 'aGVsbG8=', 'aGVsbG8']) {
      const r = await send(attach(content));
      expect(r.status, `${content} -> ${JSON.stringify(r.body)}`).toBe(200);
    }
  });
});

describe('attachments without content_type', () => {
  it('take the media type of their filename, as Resend does, so an inline image shows', async () => {
    const r = await send(
      email({
        html: '<img src="cid:logo">',
        attachments: [
          { filename: 'logo.PNG', content: 'aGk=', content_id: 'logo' },
          { filename: 'invoice.pdf', content: 'aGk=' },
          { filename: 'data', content: 'aGk=' },
          { filename: 'notes.txt', content: 'aGk=', content_type: 'application/x-custom' },
        ],
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const list = await org.test.get(`/v1/emails/${r.body.id}/attachments`);
    expect(Object.fromEntries(list.body.data.map((a: any) => [a.filename, a.content_type]))).toEqual({
      'logo.PNG': 'image/png',
      'invoice.pdf': 'application/pdf',
      data: 'application/octet-stream',
      'notes.txt': 'application/x-custom',
    });
  });
});

describe('custom headers', () => {
  it('refuses one name given twice in different case, which would go out once', async () => {
    await expectValidationErrors(send, [
      [email({ headers: { 'X-Campaign': 'a', 'x-campaign': 'b' } }), 'headers.x-campaign'],
    ]);
  });

  it('refuses every Content-* and ARC-* header, as the MIME structure and signatures are Postline’s', async () => {
    await expectValidationErrors(send, [
      [email({ headers: { 'Content-Location': 'https://x.example/' } }), 'headers.Content-Location'],
      [email({ headers: { 'content-md5': 'abc' } }), 'headers.content-md5'],
      [email({ headers: { 'ARC-Anything': 'x' } }), 'headers.ARC-Anything'],
    ]);
    const ok = await send(
      email({ headers: { 'X-Content-Id': 'x', 'List-Unsubscribe': '<https://x.example/u>' } }),
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });
});

describe('messages that name the rule', () => {
  const many = (n: number) => Array.from({ length: n }, (_, i) => `r${i}@example.org`);

  it('names the limit of 50 recipients for a list that is too long', async () => {
    await expectValidationErrors(send, [
      [email({ to: many(60) }), /`to`: .*50/],
      [email({ cc: many(51) }), /`cc`: .*50/],
      [email({ reply_to: many(60) }), /`reply_to`: .*50/],
    ]);
  });

  it('counts each address once over to, cc and bcc, as it is sent once', async () => {
    const fifty = many(50);
    // The same fifty again in cc and bcc, one in other letters: fifty recipients.
    const r = await send(
      email({ to: fifty, cc: [...fifty.slice(0, 49), 'R49@EXAMPLE.ORG'], bcc: ['Ann <r0@example.org>'] }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((await org.test.get(`/v1/emails/${r.body.id}`)).body.recipients).toHaveLength(50);
    const over = await send(email({ to: fifty, cc: ['r50@example.org'] }));
    expect([over.status, over.body.error.message]).toEqual([
      422,
      '`to`: at most 50 recipients in all (to, cc and bcc)',
    ]);
  });

  it('says what an address field takes when it is neither a string nor an array', async () => {
    await expectValidationErrors(send, [[email({ to: 5 }), /`to`: .*address/]]);
  });

  it("names the rule a Resend-style tag's value breaks", async () => {
    await expectValidationErrors(send, [
      [email({ tags: [{ name: 'category', value: 'two words' }] }), /`tags\[0\]\.value`: .*A-Z a-z 0-9 _ -/],
      [email({ tags: ['two words'] }), /`tags\[0\]`: .*A-Z a-z 0-9 _ -/],
    ]);
  });
});

describe('GET /v1/emails?domain=', () => {
  it('finds an internationalised domain by its Unicode name as well as by punycode', async () => {
    const r = await send(email({ from: 'hello@bücher.example' }));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    for (const name of ['bücher.example', 'BÜCHER.example', 'xn--bcher-kva.example']) {
      const list = await org.test.get(`/v1/emails?domain=${encodeURIComponent(name)}`);
      expect(list.status).toBe(200);
      expect(
        list.body.data.map((e: any) => e.id),
        name,
      ).toEqual([r.body.id]);
    }
  });
});

describe('POST /v1/emails/batch', () => {
  it('names the item whose whole body is wrong, not the batch', async () => {
    const r = await org.test.post('/v1/emails/batch', [email(), 5, email({ colour: 'red' })]);
    expect(r.status).toBe(200);
    expect(r.body.data[0]).toMatchObject({ status: 'queued' });
    expect(r.body.data[1].error).toMatchObject({ code: 'validation_error' });
    expect(r.body.data[1].error.message).toMatch(/^`body\[1\]`: /);
    expect(r.body.data[2].error.message).toContain('`colour` in body[2]');
  });
});
