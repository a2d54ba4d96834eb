import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import type { TestOrg } from '../support/service.ts';
import { expectValidationErrors } from '../support/validation.ts';

let acme: TestOrg;
let other: TestOrg;
let domain: any;
const clock = new ManualClock('2026-03-10T12:00:00Z');

const { svc, dns } = useDnsService({ clock });
beforeAll(async () => {
  acme = await svc.createOrg('pro');
  other = await svc.createOrg('pro');
  domain = await addVerifiedDomain(acme.live, dns, 'acme-mail.test');
});

const basic = (over: Record<string, unknown> = {}) => ({
  from: 'Acme <hello@acme-mail.test>',
  to: ['ann@example.org'],
  subject: 'Welcome',
  html: '<p>Hi</p>',
  ...over,
});

describe('POST /v1/emails', () => {
  it('queues an email and serves it back in full', async () => {
    const r = await acme.live.post('/v1/emails', {
      ...basic(),
      cc: 'Bob <bob@example.org>',
      bcc: ['carl@example.org'],
      reply_to: 'support@acme-mail.test',
      text: 'Hi',
      headers: { 'X-Campaign': 'spring' },
      tags: ['welcome', 'onboarding_1'],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^em_[0-9a-z]{26}$/),
      status: 'queued',
      suppressed_recipients: [],
    });
    const got = await acme.live.get(`/v1/emails/${r.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      object: 'email',
      id: r.body.id,
      status: 'queued',
      from: 'Acme <hello@acme-mail.test>',
      to: ['ann@example.org'],
      cc: ['Bob <bob@example.org>'],
      bcc: ['carl@example.org'],
      reply_to: ['support@acme-mail.test'],
      subject: 'Welcome',
      html: '<p>Hi</p>',
      text: 'Hi',
      headers: { 'X-Campaign': 'spring' },
      tags: ['welcome', 'onboarding_1'],
      domain_id: domain.id,
      send_at: null,
      created_at: clock.now().toISOString(),
      last_event: 'email.queued',
    });
    expect(got.body.recipients.map((x: any) => [x.email, x.status])).toEqual([
      ['ann@example.org', 'pending'],
      ['bob@example.org', 'pending'],
      ['carl@example.org', 'pending'],
    ]);
    const events = await acme.live.get(`/v1/emails/${r.body.id}/events`);
    expect(events.body.data).toEqual([
      {
        object: 'email_event',
        type: 'email.queued',
        created_at: expect.any(String),
        recipient: null,
        data: {},
      },
    ]);
    // Who acted stays in the log, for operators (`postline streams show`).
    expect((await svc.postline.services.store.readStream(`email-${r.body.id}`))[0].metadata.actor).toMatch(
      /^key_/,
    );
  });

  it('accepts display names, quoted names and internationalised domains', async () => {
    const r = await acme.live.post(
      '/v1/emails',
      basic({ to: ['"Doe, Jane" <jane@bücher.example>', 'Zoë <zoe@example.org>'] }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const got = await acme.live.get(`/v1/emails/${r.body.id}`);
    expect(got.body.to).toEqual(['"Doe, Jane" <jane@xn--bcher-kva.example>', 'Zoë <zoe@example.org>']);
  });

  it('refuses bad requests with a 422 naming the field', async () => {
    const many = Array.from({ length: 51 }, (_, i) => `r${i}@example.org`);
    const cases: [Record<string, unknown>, string][] = [
      [{ ...basic(), from: undefined }, 'from'],
      [basic({ from: 'not an address' }), 'from'],
      [basic({ to: [] }), 'to'],
      [basic({ to: ['ann@'] }), 'to[0]'],
      [basic({ to: ['ann@example.org', 'bad@@example.org'] }), 'to[1]'],
      [basic({ to: ['x@localhost'] }), 'to[0]'],
      [basic({ cc: 'a@b' }), 'cc'],
      [basic({ to: many }), 'to'],
      [basic({ to: many.slice(0, 30), cc: many.slice(30, 51) }), '50'],
      [basic({ subject: undefined }), 'subject'],
      [basic({ subject: 'a\r\nBcc: x@y.org' }), 'subject'],
      [basic({ html: undefined }), 'html'],
      [basic({ headers: { 'X-Evil': 'a\r\nBcc: x@evil.org' } }), 'headers.X-Evil'],
      [basic({ headers: { From: 'x@evil.org' } }), 'headers.From'],
      [basic({ headers: { 'Message-ID': '<x@y>' } }), 'headers.Message-ID'],
      [basic({ headers: { 'Bad Name': 'x' } }), 'headers.Bad Name'],
      [basic({ tags: ['has space'] }), 'tags[0]'],
      [basic({ tags: 'welcome' }), 'tags'],
      [basic({ send_at: '2020-01-01T00:00:00Z' }), 'send_at'],
      [basic({ send_at: '2026-05-01T00:00:00Z' }), 'send_at'],
      [basic({ send_at: 'someday' }), 'send_at'],
      [basic({ attachments: [{ filename: 'a.txt', content: '***' }] }), 'attachments[0].content'],
      [basic({ attachments: [{ filename: 'a/b.txt', content: 'aGk=' }] }), 'attachments[0].filename'],
      [
        basic({ attachments: [{ filename: 'a.txt', content: 'aGk=', content_type: 'text' }] }),
        'attachments[0].content_type',
      ],
      [basic({ template_data: { a: 1 } }), 'template_data'],
      [basic({ template_id: 'tmpl_0123' }), 'template_id'],
      [basic({ unknown_field: 1 }), 'unknown_field'],
    ];
    await expectValidationErrors((body) => acme.live.post('/v1/emails', body), cases);
  });

  it('accepts large attachments up to 40 MB in all, refuses more', async () => {
    const three = Buffer.alloc(3 * 1024 * 1024, 2).toString('base64');
    const ok = await acme.live.post(
      '/v1/emails',
      basic({ attachments: [{ filename: 'a.bin', content: three }] }),
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const big = Buffer.alloc(21 * 1024 * 1024, 1).toString('base64');
    const r = await acme.live.post(
      '/v1/emails',
      basic({
        attachments: [
          { filename: 'a.bin', content: big },
          { filename: 'b.bin', content: big },
        ],
      }),
    );
    expect(r.status).toBe(422);
    expect(r.body.error.message).toMatch(/attachments.*40 MB/);
  });

  it('answers 400 for malformed JSON and 401 without a key', async () => {
    expect((await acme.live.post('/v1/emails', '{"from":')).status).toBe(400);
    const anon = await svc.client().post('/v1/emails', basic());
    expect(anon.status).toBe(401);
  });

  it('sends live only from a verified domain of the organization', async () => {
    const unknown = await acme.live.post('/v1/emails', basic({ from: 'x@not-ours.test' }));
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.code).toBe('domain_not_verified');
    const pending = await acme.live.post('/v1/domains', { name: 'pending-acme.test' });
    const p = await acme.live.post('/v1/emails', basic({ from: 'x@pending-acme.test' }));
    expect(p.status).toBe(422);
    expect(p.body.error.message).toContain('not verified');
    expect(pending.status).toBe(201);
    // Another organization cannot send from acme's verified domain.
    const theirs = await other.live.post('/v1/emails', basic());
    expect(theirs.body.error.code).toBe('domain_not_verified');
    // Test keys may use any domain.
    const test = await other.test.post('/v1/emails', basic({ from: 'x@anything.test' }));
    expect(test.status).toBe(200);
  });

  it('restricts a sending_access key with a domain to that domain', async () => {
    const key = await acme.live.post('/v1/api-keys', {
      name: 'sender',
      permission: 'sending_access',
      domain_id: domain.id,
    });
    const sender = svc.client(key.body.key);
    expect((await sender.post('/v1/emails', basic())).status).toBe(200);
    const elsewhere = await sender.post('/v1/emails', basic({ from: 'x@acme-other.test' }));
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.body.error.code).toBe('domain_not_allowed');
    expect((await sender.get('/v1/emails')).status).toBe(403);
  });

  it('drops suppressed recipients and reports them; all suppressed is a 422', async () => {
    await acme.live.post('/v1/suppressions', { email: 'gone@example.org' });
    const r = await acme.live.post('/v1/emails', basic({ to: ['ann@example.org', 'GONE@example.org'] }));
    expect(r.status).toBe(200);
    expect(r.body.suppressed_recipients).toEqual(['gone@example.org']);
    const got = await acme.live.get(`/v1/emails/${r.body.id}`);
    expect(got.body.to).toEqual(['ann@example.org']);
    expect(got.body.recipients.map((x: any) => x.email)).toEqual(['ann@example.org']);
    const all = await acme.live.post('/v1/emails', basic({ to: ['gone@example.org'] }));
    expect(all.status).toBe(422);
    expect(all.body.error.code).toBe('all_recipients_suppressed');
    // Suppressions are per mode: the test key still sends to the address.
    expect((await acme.test.post('/v1/emails', basic({ to: ['gone@example.org'] }))).status).toBe(200);
  });

  it('keeps a short suppression list in memory, seeing additions and deletions at once', async () => {
    const org = await svc.createOrg('pro');
    const send = () => org.test.post('/v1/emails', basic({ to: ['ann@example.org', 'zed@example.org'] }));
    expect((await send()).body.suppressed_recipients).toEqual([]); // the (empty) list is now in memory
    const added = await org.test.post('/v1/suppressions', { email: 'Zed@Example.org' });
    expect((await send()).body.suppressed_recipients).toEqual(['zed@example.org']);
    await org.test.delete(`/v1/suppressions/${added.body.id}`);
    expect((await send()).body.suppressed_recipients).toEqual([]);
  });

  it('asks per address for an organization with a long suppression list', async () => {
    const org = await svc.createOrg('pro');
    // The read model's rows, written straight in: 1,100 suppressions through the API would take long. The last
    // one lies beyond the first 1,001 rows that the memory path reads.
    await svc.postline.services.db.query(
      `INSERT INTO suppressions (id, org_id, mode, email, email_lower, reason, created_at)
       SELECT 'sup_long_' || g, $1, 'test', 'x' || g || '@long.test', 'x' || g || '@long.test', 'manual', now()
       FROM generate_series(0, 1099) AS g`,
      [org.orgId],
    );
    const r = await org.test.post('/v1/emails', basic({ to: ['ann@example.org', 'X1099@long.test'] }));
    expect(r.status).toBe(200);
    expect(r.body.suppressed_recipients).toEqual(['x1099@long.test']);
  });

  it('renders a published template; template problems are 422', async () => {
    const t = await acme.live.post('/v1/templates', {
      name: 'welcome',
      subject: 'Hi {{name}}',
      html: '<p>Hello {{name}}</p>',
      text: 'Hello {{name}}',
      variables: [{ name: 'name', type: 'string', required: true }],
    });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    const draft = await acme.live.post('/v1/emails', {
      ...basic({ subject: undefined, html: undefined }),
      template_id: t.body.id,
    });
    expect(draft.status).toBe(422);
    expect(draft.body.error.code).toBe('template_not_published');
    await acme.live.post(`/v1/templates/${t.body.id}/publish`);
    const body = { ...basic({ subject: undefined, html: undefined }), template_id: t.body.id };
    const r = await acme.live.post('/v1/emails', { ...body, template_data: { name: 'Ann' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const got = await acme.live.get(`/v1/emails/${r.body.id}`);
    expect(got.body).toMatchObject({
      subject: 'Hi Ann',
      html: '<p>Hello Ann</p>',
      text: 'Hello Ann',
      template_id: t.body.id,
    });
    expect(got.body.template_version_id).toBeTruthy();
    const missing = await acme.live.post('/v1/emails', body);
    expect(missing.status).toBe(422);
    expect(missing.body.error.code).toBe('template_render_error');
    const unknown = await acme.live.post('/v1/emails', {
      ...body,
      template_id: 'tmpl_00000000000000000000000000',
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.message).toContain('template_id');
    const mixed = await acme.live.post('/v1/emails', { ...body, html: '<p>x</p>' });
    expect(mixed.status).toBe(422);
  });

  it('refuses a template whose subject renders blank, unless the request gives its own', async () => {
    const t = await acme.live.post('/v1/templates', {
      name: 'headline',
      subject: '{{headline}}',
      text: 'Read on',
      variables: [{ name: 'headline', type: 'string', required: false }],
    });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    await acme.live.post(`/v1/templates/${t.body.id}/publish`);
    const body = { ...basic({ subject: undefined, html: undefined }), template_id: t.body.id };
    for (const template_data of [{}, { headline: '  ' }]) {
      const r = await acme.live.post('/v1/emails', { ...body, template_data });
      expect([r.status, r.body.error.code, r.body.error.message]).toEqual([
        422,
        'template_render_error',
        'The rendered subject is empty; give the data its variables need, or a `subject` of its own.',
      ]);
    }
    const own = await acme.live.post('/v1/emails', { ...body, subject: 'Our news' });
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect((await acme.live.get(`/v1/emails/${own.body.id}`)).body.subject).toBe('Our news');
  });

  it('replays an idempotent request and refuses the key with another body', async () => {
    const headers = { 'idempotency-key': `k-${Date.now()}` };
    const first = await acme.live.post('/v1/emails', basic(), headers);
    const again = await acme.live.post('/v1/emails', basic(), headers);
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const changed = await acme.live.post('/v1/emails', basic({ subject: 'Other' }), headers);
    expect(changed.status).toBe(409);
    expect(changed.body.error.code).toBe('idempotency_key_reused');
  });
});

describe('attachments', () => {
  it('stores the bytes, lists metadata and serves a download URL that expires', async () => {
    const pdf = Buffer.from('%PDF-1.4 hello');
    const r = await acme.live.post(
      '/v1/emails',
      basic({
        attachments: [
          { filename: 'invoice.pdf', content: pdf.toString('base64'), content_type: 'application/pdf' },
          {
            filename: 'logo.png',
            content: Buffer.from('png').toString('base64'),
            content_type: 'image/png',
            content_id: 'logo',
          },
        ],
      }),
    );
    expect(r.status).toBe(200);
    const events = await svc.postline.services.store.readStream(`email-${r.body.id}`);
    expect(JSON.stringify(events)).not.toContain(pdf.toString('base64'));
    const list = await acme.live.get(`/v1/emails/${r.body.id}/attachments`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((a: any) => [a.filename, a.content_type, a.size, a.content_id])).toEqual([
      ['invoice.pdf', 'application/pdf', pdf.length, null],
      ['logo.png', 'image/png', 3, 'logo'],
    ]);
    const one = await acme.live.get(`/v1/emails/${r.body.id}/attachments/${list.body.data[0].id}`);
    expect(one.status).toBe(200);
    expect(one.body.download_url).toMatch(/\/blobs\/blob_/);
    const url = new URL(one.body.download_url);
    const local = `${svc.baseUrl}${url.pathname}${url.search}`;
    const dl = await request(local);
    expect(dl.statusCode).toBe(200);
    expect(dl.headers['content-type']).toBe('application/pdf');
    expect(dl.headers['content-disposition']).toBe("attachment; filename*=UTF-8''invoice.pdf");
    expect(dl.headers['content-security-policy']).toBe("sandbox; default-src 'none'");
    expect(Buffer.from(await dl.body.arrayBuffer())).toEqual(pdf);
    const tampered = await request(local.replace('invoice.pdf', 'other.pdf'));
    expect(tampered.statusCode).toBe(404);
    await tampered.body.dump();
    clock.advance(2 * 3600_000);
    try {
      const expired = await request(local);
      expect(expired.statusCode).toBe(404);
      await expired.body.dump();
    } finally {
      clock.advance(-2 * 3600_000);
    }
    expect((await other.live.get(`/v1/emails/${r.body.id}/attachments`)).status).toBe(404);
    expect((await other.live.get(`/v1/emails/${r.body.id}/attachments/${list.body.data[0].id}`)).status).toBe(
      404,
    );
  });
});

describe('GET /v1/emails', () => {
  it('lists newest first with filters and cursor pagination', async () => {
    const org = await svc.createOrg('pro');
    const ids: string[] = [];
    for (const [i, tag] of ['a', 'b', 'a'].entries()) {
      clock.advance(60_000);
      const r = await org.test.post('/v1/emails', basic({ from: `x@list${i}.test`, tags: [tag] }));
      ids.push(r.body.id);
    }
    const all = await org.test.get('/v1/emails');
    expect(all.body.data.map((e: any) => e.id)).toEqual([...ids].reverse());
    expect(all.body.has_more).toBe(false);
    expect(all.body.data[0].html).toBeUndefined();
    const tagged = await org.test.get('/v1/emails?tag=a');
    expect(tagged.body.data.map((e: any) => e.id)).toEqual([ids[2], ids[0]]);
    const byDomain = await org.test.get('/v1/emails?domain=list1.test');
    expect(byDomain.body.data.map((e: any) => e.id)).toEqual([ids[1]]);
    const page = await org.test.get('/v1/emails?limit=2');
    expect(page.body.has_more).toBe(true);
    const next = await org.test.get(`/v1/emails?limit=2&starting_after=${page.body.data[1].id}`);
    expect(next.body.data.map((e: any) => e.id)).toEqual([ids[0]]);
    const status = await org.test.get('/v1/emails?status=queued');
    expect(status.body.data).toHaveLength(3);
    expect((await org.test.get('/v1/emails?status=scheduled')).body.data).toHaveLength(0);
    const from = new Date(clock.now().getTime() - 90_000).toISOString();
    const recent = await org.test.get(`/v1/emails?from_date=${encodeURIComponent(from)}`);
    expect(recent.body.data.map((e: any) => e.id)).toEqual([ids[2], ids[1]]);
    for (const bad of ['status=nope', 'from_date=yesterday', 'limit=0', 'colour=red']) {
      const r = await org.test.get(`/v1/emails?${bad}`);
      expect(r.status, bad).toBe(422);
    }
  });

  it('keeps test and live apart, and organizations apart', async () => {
    const live = await acme.live.post('/v1/emails', basic());
    const test = await acme.test.post('/v1/emails', basic());
    expect((await acme.test.get(`/v1/emails/${live.body.id}`)).status).toBe(404);
    expect((await acme.live.get(`/v1/emails/${test.body.id}`)).status).toBe(404);
    expect((await other.live.get(`/v1/emails/${live.body.id}`)).status).toBe(404);
    expect((await other.live.get(`/v1/emails/${live.body.id}/events`)).status).toBe(404);
    const testIds = (await acme.test.get('/v1/emails?limit=100')).body.data.map((e: any) => e.id);
    expect(testIds).toContain(test.body.id);
    expect(testIds).not.toContain(live.body.id);
    expect((await acme.live.get('/v1/emails/em_00000000000000000000000000')).status).toBe(404);
  });
});

describe('scheduled emails: PATCH and cancel', () => {
  const later = (h: number) => new Date(clock.now().getTime() + h * 3600_000).toISOString();

  it('schedules, reschedules and cancels', async () => {
    const r = await acme.live.post('/v1/emails', basic({ send_at: later(2) }));
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'scheduled', send_at: later(2) });
    const patched = await acme.live.patch(`/v1/emails/${r.body.id}`, { send_at: later(5) });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id: r.body.id, status: 'scheduled', send_at: later(5) });
    const canceled = await acme.live.post(`/v1/emails/${r.body.id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ id: r.body.id, status: 'canceled', last_event: 'email.canceled' });
    const again = await acme.live.post(`/v1/emails/${r.body.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('email_not_scheduled');
    expect((await acme.live.patch(`/v1/emails/${r.body.id}`, { send_at: later(6) })).status).toBe(409);
  });

  it('answers 409 for a queued email, 422 for a bad send_at, 404 for someone else', async () => {
    const queued = await acme.live.post('/v1/emails', basic());
    expect((await acme.live.post(`/v1/emails/${queued.body.id}/cancel`)).status).toBe(409);
    const p = await acme.live.patch(`/v1/emails/${queued.body.id}`, { send_at: later(1) });
    expect(p.status).toBe(409);
    const s = await acme.live.post('/v1/emails', basic({ send_at: later(2) }));
    for (const body of [
      { send_at: later(-1) },
      { send_at: 'soon' },
      {},
      { send_at: later(1), to: ['x@y.org'] },
    ]) {
      const r = await acme.live.patch(`/v1/emails/${s.body.id}`, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
    }
    expect((await other.live.post(`/v1/emails/${s.body.id}/cancel`)).status).toBe(404);
    expect((await acme.test.patch(`/v1/emails/${s.body.id}`, { send_at: later(3) })).status).toBe(404);
    expect((await acme.live.post('/v1/emails/em_00000000000000000000000000/cancel')).status).toBe(404);
  });
});

describe('POST /v1/emails/batch', () => {
  it('accepts each item on its own and answers in input order', async () => {
    const r = await acme.live.post('/v1/emails/batch', [
      basic(),
      basic({ to: ['bad@'] }),
      basic({ send_at: later(1) }),
    ]);
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(3);
    expect(r.body.data[0]).toMatchObject({ id: expect.stringMatching(/^em_/), status: 'queued' });
    expect(r.body.data[1].error).toMatchObject({ code: 'validation_error', type: 'validation_error' });
    expect(r.body.data[1].error.message).toContain('to[0]');
    expect(r.body.data[2]).toMatchObject({ status: 'scheduled' });
    for (const item of [r.body.data[0], r.body.data[2]])
      expect((await acme.live.get(`/v1/emails/${item.id}`)).status).toBe(200);
  });

  it('with x-batch-validation: strict, refuses the whole batch for one bad item and sends none', async () => {
    const strict = { 'x-batch-validation': 'strict' };
    const listed = async () => (await acme.live.get('/v1/emails?limit=100')).body.data.length;
    const before = await listed();
    const r = await acme.live.post('/v1/emails/batch', [basic(), basic({ to: ['bad@'] }), basic()], strict);
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({
      code: 'validation_error',
      message: expect.stringMatching(/^`body\[1\]`: `to\[0\]`/),
    });
    const unverified = await acme.live.post(
      '/v1/emails/batch',
      [basic(), basic({ from: 'x@nowhere.test' })],
      strict,
    );
    expect([unverified.status, unverified.body.error.code]).toEqual([422, 'domain_not_verified']);
    expect(unverified.body.error.message).toMatch(/^`body\[1\]`: /);
    const all = await acme.live.post('/v1/emails/batch', [basic({ to: ['bad@'] }), { from: 1 }], strict);
    expect(all.body.error.message).toMatch(/^`body\[0\]`: /);
    expect(await listed()).toBe(before);
    const good = await acme.live.post('/v1/emails/batch', [basic(), basic()], strict);
    expect(good.body.data.map((i: any) => i.status)).toEqual(['queued', 'queued']);
    const permissive = await acme.live.post('/v1/emails/batch', [basic(), basic({ to: ['bad@'] })], {
      'x-batch-validation': 'Permissive',
    });
    expect(permissive.body.data.map((i: any) => i.status ?? i.error.code)).toEqual([
      'queued',
      'validation_error',
    ]);
    const unknown = await acme.live.post('/v1/emails/batch', [basic()], { 'x-batch-validation': 'lenient' });
    expect([unknown.status, unknown.body.error.message]).toEqual([
      422,
      '`x-batch-validation`: must be `strict` or `permissive`',
    ]);
    expect(await listed()).toBe(before + 3);
  });

  it('refuses an empty batch, more than 100 items and a non-array body with 400', async () => {
    for (const body of [[], Array.from({ length: 101 }, () => basic()), basic()]) {
      const r = await acme.live.post('/v1/emails/batch', body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_batch');
    }
  });

  it('replays the whole batch for a repeated Idempotency-Key', async () => {
    const headers = { 'idempotency-key': `batch-${Date.now()}` };
    const first = await acme.live.post('/v1/emails/batch', [basic(), basic()], headers);
    const again = await acme.live.post('/v1/emails/batch', [basic(), basic()], headers);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  function later(h: number) {
    return new Date(clock.now().getTime() + h * 3600_000).toISOString();
  }
});

describe('monthly quota', () => {
  it('stops a Free organization at 100 emails a month, per mode', async () => {
    const free = await svc.createOrg('free');
    const batch = Array.from({ length: 98 }, () => basic({ from: 'x@free.test' }));
    const b = await free.test.post('/v1/emails/batch', batch);
    expect(b.body.data.every((i: any) => i.status === 'queued')).toBe(true);
    // A strict batch takes all it asks or nothing: three of the two left refuse it whole, taking none.
    const strict = await free.test.post(
      '/v1/emails/batch',
      [basic({ from: 'x@free.test' }), basic({ from: 'x@free.test' }), basic({ from: 'x@free.test' })],
      { 'x-batch-validation': 'strict' },
    );
    expect([strict.status, strict.body.error.code]).toEqual([429, 'monthly_quota_exceeded']);
    const last = await free.test.post('/v1/emails/batch', [
      basic({ from: 'x@free.test' }),
      basic({ from: 'x@free.test' }),
      basic({ from: 'x@free.test' }),
    ]);
    expect(last.body.data.map((i: any) => i.status ?? i.error.code)).toEqual([
      'queued',
      'queued',
      'monthly_quota_exceeded',
    ]);
    const over = await free.test.post('/v1/emails', basic({ from: 'x@free.test' }));
    expect(over.status).toBe(429);
    expect(over.body.error).toMatchObject({ type: 'quota_error', code: 'monthly_quota_exceeded' });
    // Retry-After: the seconds until the month ends (UTC), when the quota resets.
    const reset = Date.UTC(2026, 3, 1);
    expect(Number(over.headers['retry-after'])).toBe(Math.ceil((reset - clock.now().getTime()) / 1000));
    const usage = await free.test.get('/v1/usage');
    expect(usage.body).toMatchObject({ plan: 'free', mode: 'test', emails: 100, included: 100, overage: 0 });
    // The other mode has its own count; a new month starts afresh.
    expect((await free.live.get('/v1/usage')).body.emails).toBe(0);
    clock.set('2026-04-01T00:00:01Z');
    try {
      expect((await free.test.post('/v1/emails', basic({ from: 'x@free.test' }))).status).toBe(200);
    } finally {
      clock.set('2026-03-10T12:30:00Z');
    }
  });

  it('counts Pro usage without stopping it', async () => {
    const usage = await acme.live.get('/v1/usage');
    expect(usage.body).toMatchObject({ plan: 'pro', included: 50_000, overage: 0, overage_cost_eur: 0 });
    expect(usage.body.emails).toBeGreaterThan(5);
  });
});
