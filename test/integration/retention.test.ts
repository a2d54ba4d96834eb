import { beforeAll, describe, expect, it } from 'vitest';
import { receivedEmailStream } from '../../domain/received-emails/received-email.events.ts';
import { ManualClock } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';
import { RetentionProcess } from '../../processes/retention/retention.process.ts';
import { messageWithAttachment, receivedEmail } from '../fixtures/received-email.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import type { TestOrg } from '../support/service.ts';

const clock = new ManualClock('2026-04-01T00:00:00Z');
let acme: TestOrg;
let other: TestOrg;
let retention: RetentionProcess;

const DAY = 24 * 3600_000;

const { svc, dns } = useDnsService({ clock });
beforeAll(async () => {
  acme = await svc.createOrg('free');
  other = await svc.createOrg('free');
  retention = new RetentionProcess(svc.postline.services);
});

/** One run of retention; then the read model has caught up with what it appended. */
async function runRetention() {
  const purged = await retention.runOnce();
  const { store, readYourWrites } = svc.postline.services;
  await readYourWrites.waitFor(['domains', 'received_emails'], await store.headPosition({ committed: true }));
  return purged;
}

describe('retention of deleted domains', () => {
  it('purges a deleted domain after 30 days, and only then frees its name', async () => {
    const name = `r-${Date.now().toString(36)}.example.com`;
    const d = await addVerifiedDomain(acme.live, dns, name);
    const del = await acme.live.delete(`/v1/domains/${d.id}`);
    expect(del.body).toEqual({ id: d.id, deleted: true });
    const deletedAt = clock.now().getTime();

    // Within the grace period: the name stays taken, for this organization and (it was verified) for others.
    clock.set(new Date(deletedAt + 30 * DAY - 1000));
    expect(await runRetention()).toBe(0);
    expect((await acme.live.post('/v1/domains', { name })).status).toBe(409);
    expect((await other.live.post('/v1/domains', { name })).status).toBe(409);
    const { rows: kept } = await svc.postline.services.db.query(
      'SELECT deleted_at FROM domains WHERE id = $1',
      [d.id],
    );
    expect(kept).toHaveLength(1);

    clock.set(new Date(deletedAt + 30 * DAY));
    expect(await runRetention()).toBe(1);
    const { rows: gone } = await svc.postline.services.db.query('SELECT id FROM domains WHERE id = $1', [
      d.id,
    ]);
    expect(gone).toHaveLength(0);
    const events = await svc.postline.services.store.readStream(`domain-${d.id}`);
    expect(events.at(-1)).toMatchObject({
      type: 'DomainPurged',
      data: { domainId: d.id, name, purgedAt: clock.now().toISOString() },
      metadata: { orgId: acme.orgId, mode: 'live', actor: 'system' },
    });
    expect(await runRetention()).toBe(0);

    const again = await other.live.post('/v1/domains', { name });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(d.id);
  });

  it('leaves domains that are not deleted alone', async () => {
    const org = await svc.createOrg('pro');
    const d = await org.live.post('/v1/domains', { name: `keep-${Date.now().toString(36)}.example.com` });
    clock.advance(365 * DAY);
    await runRetention();
    expect((await org.live.get(`/v1/domains/${d.body.id}`)).status).toBe(200);
  });
});

describe('restoring a deleted domain', () => {
  it('takes it back within the grace period, as it was, and retention leaves it alone', async () => {
    const org = await svc.createOrg('free');
    const name = `back-${Date.now().toString(36)}.example.com`;
    const d = await addVerifiedDomain(org.live, dns, name);
    expect((await org.live.delete(`/v1/domains/${d.id}`)).status).toBe(200);
    expect((await org.live.get(`/v1/domains/${d.id}`)).status).toBe(404);
    // Another organization cannot restore it, nor can the other mode.
    expect((await other.live.post(`/v1/domains/${d.id}/restore`)).status).toBe(404);
    expect((await org.test.post(`/v1/domains/${d.id}/restore`)).status).toBe(404);

    clock.advance(29 * DAY);
    const restored = await org.live.post(`/v1/domains/${d.id}/restore`);
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(restored.body).toMatchObject({ id: d.id, name, status: 'verified' });
    expect((await org.live.get('/v1/domains')).body.data.map((x: any) => x.id)).toEqual([d.id]);
    const again = await org.live.post(`/v1/domains/${d.id}/restore`);
    expect([again.status, again.body.error.code]).toEqual([409, 'conflict']);
    // It counts against the plan again: Free has one domain.
    expect((await org.live.post('/v1/domains', { name: `second-${name}` })).body.error.code).toBe(
      'plan_limit_exceeded',
    );
    clock.advance(60 * DAY);
    await runRetention();
    expect((await org.live.get(`/v1/domains/${d.id}`)).status).toBe(200);
    const events = await svc.postline.services.store.readStream(`domain-${d.id}`);
    expect(events.at(-1)).toMatchObject({
      type: 'DomainRestored',
      data: { domainId: d.id, name },
      metadata: { orgId: org.orgId, mode: 'live' },
    });
  });

  it('refuses once the grace period is over, and when the plan has no room for it', async () => {
    const org = await svc.createOrg('free');
    const first = await org.live.post('/v1/domains', { name: `a-${Date.now().toString(36)}.example.com` });
    await org.live.delete(`/v1/domains/${first.body.id}`);
    const second = await org.live.post('/v1/domains', { name: `b-${Date.now().toString(36)}.example.com` });
    expect(second.status).toBe(201);
    const full = await org.live.post(`/v1/domains/${first.body.id}/restore`);
    expect([full.status, full.body.error.code]).toEqual([422, 'plan_limit_exceeded']);

    await org.live.delete(`/v1/domains/${second.body.id}`);
    clock.advance(30 * DAY);
    const late = await org.live.post(`/v1/domains/${first.body.id}/restore`);
    expect([late.status, late.body.error.code]).toEqual([404, 'not_found']);
  });
});

describe('retention of received emails', () => {
  it('deletes the raw message, content and attachments after INBOUND_RETENTION_DAYS; the metadata stays', async () => {
    const raw = messageWithAttachment('Keep me a while');
    const injected = await acme.test.post('/v1/emails/received', { raw });
    expect(injected.status).toBe(201);
    const id = injected.body.id;
    const attachmentId = injected.body.attachments[0].id;
    const link = (await acme.test.get(`/v1/emails/received/${id}/raw`)).body.download_url;
    const local = () => {
      const url = new URL(link);
      return fetch(`${svc.baseUrl}${url.pathname}${url.search}`);
    };
    expect((await local()).status).toBe(200);

    clock.advance(30 * DAY - 1000);
    await runRetention();
    expect((await acme.test.get(`/v1/emails/received/${id}`)).body.text_body).toBe('body');

    clock.advance(1000);
    expect(await runRetention()).toBe(1);
    const after = (await acme.test.get(`/v1/emails/received/${id}`)).body;
    expect(after).toMatchObject({
      id,
      subject: 'Keep me a while',
      from: { email: 'ann@remote.test', name: null },
      attachment_count: 1,
      text_body: null,
      html_body: null,
      headers: {
        from: 'ann@remote.test',
        to: 'hooks@acme.test',
        subject: 'Keep me a while',
        'content-type': 'multipart/mixed; boundary="b"',
      },
      purged_at: clock.now().toISOString(),
    });
    for (const path of [`/raw`, `/attachments/${attachmentId}`]) {
      const gone = await acme.test.get(`/v1/emails/received/${id}${path}`);
      expect([gone.status, gone.body.error.code]).toEqual([410, 'content_deleted']);
    }
    // The files are gone: a link handed out before (still unexpired by its signature) finds nothing.
    clock.advance(-30 * DAY);
    expect((await local()).status).toBe(404);
    clock.advance(30 * DAY);
    expect(await runRetention()).toBe(0);
  });
});

describe('retention of a message received for two organizations', () => {
  it("keeps the shared files while one organization's record is not purged, and deletes them after the last", async () => {
    const { store, readYourWrites, blobs } = svc.postline.services;
    const at = clock.now().getTime();
    const rawKey = await blobs.put(Buffer.from('From: ann@remote.test\r\nSubject: Shared\r\n\r\nbody'), at);
    const contentKey = await blobs.put(Buffer.from(JSON.stringify({ text: 'body', html: null })), at);
    const headersKey = await blobs.put(Buffer.from(JSON.stringify({ headers: [] })), at);
    const attachmentKey = await blobs.put(Buffer.from('file'), at);
    // One message, two records sharing its files; the second recorded 30 s after the first, so due 30 s later.
    const records: [TestOrg, string][] = [];
    for (const [org, offset] of [
      [acme, 0],
      [other, 30_000],
    ] as const) {
      const receivedEmailId = newId('in', at + offset);
      const data = {
        ...receivedEmail,
        receivedEmailId,
        orgId: org.orgId,
        mode: 'test' as const,
        domainId: null,
        domain: null,
        rawKey,
        contentKey,
        headersKey,
        attachments: [
          { ...receivedEmail.attachments[0], attachmentId: 'att_shared', blobKey: attachmentKey },
        ],
        receivedAt: new Date(at + offset).toISOString(),
      };
      const appended = await store.append(
        receivedEmailStream(receivedEmailId),
        [{ type: 'InboundEmailReceived', data, metadata: { orgId: org.orgId, mode: 'test', actor: 'mx' } }],
        { expectedRevision: 'no_stream' },
      );
      await readYourWrites.waitFor(['received_emails'], appended.position);
      records.push([org, receivedEmailId]);
    }
    /** The raw message's and the attachment's bytes, through the download links the API hands out. */
    const downloads = async (org: TestOrg, id: string) =>
      Promise.all(
        [`/raw`, `/attachments/att_shared`].map(async (path) => {
          const link = (await org.test.get(`/v1/emails/received/${id}${path}`)).body.download_url;
          const url = new URL(link);
          const res = await fetch(`${svc.baseUrl}${url.pathname}${url.search}`);
          return [res.status, await res.text()];
        }),
      );
    const [[, first], [, second]] = records;

    clock.set(new Date(at + 30 * DAY));
    await runRetention();
    expect((await acme.test.get(`/v1/emails/received/${first}`)).body.purged_at).toBe(
      clock.now().toISOString(),
    );
    expect((await other.test.get(`/v1/emails/received/${second}`)).body).toMatchObject({
      purged_at: null,
      text_body: 'body',
    });
    expect(await downloads(other, second)).toEqual([
      [200, 'From: ann@remote.test\r\nSubject: Shared\r\n\r\nbody'],
      [200, 'file'],
    ]);

    clock.set(new Date(at + 30 * DAY + 30_000));
    await runRetention();
    expect((await other.test.get(`/v1/emails/received/${second}`)).body.purged_at).toBe(
      clock.now().toISOString(),
    );
    for (const key of [rawKey, contentKey, attachmentKey]) expect(await blobs.exists(key), key).toBe(false);
    expect(await blobs.exists(headersKey)).toBe(true);
  });
});

/** Every value of a received email's `headers` is one string, as the spec types them. */
const expectStringHeaders = (email: any) => {
  expect(email.headers).toBeTypeOf('object');
  for (const [name, value] of Object.entries(email.headers)) expect(value, name).toBeTypeOf('string');
};

describe('the headers of a received email', () => {
  const RECEIVED = [
    'from mx2.relay.test (mx2.relay.test [192.0.2.2]) by mx.acme.test; Tue, 31 Mar 2026 23:59:59 +0000',
    'from mx1.relay.test (mx1.relay.test [192.0.2.1])\n\tby mx2.relay.test; Tue, 31 Mar 2026 23:59:58 +0000',
    'from sender.remote.test by mx1.relay.test; Tue, 31 Mar 2026 23:59:57 +0000',
  ];
  const raw = [
    `Received: ${RECEIVED[0]}`,
    `Received: ${RECEIVED[1]}`,
    'From: Ann <ann@remote.test>',
    `Received: ${RECEIVED[2]}`,
    'To: hooks@acme.test',
    'Subject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=',
    'X-Note: one',
    'X-Note: two',
    '',
    'body',
  ].join('\n');
  /** How each Received header reads once unfolded. */
  const unfolded = RECEIVED.map((r) => r.replace(/\n\t/, ' '));

  it('maps each name to one string, a repeated one joined in order, keeps the full list, and keeps both after the retention', async () => {
    const injected = await acme.test.post('/v1/emails/received', { raw });
    expect(injected.status, JSON.stringify(injected.body)).toBe(201);
    const id = injected.body.id;
    const expectedHeaders = {
      received: unfolded.join('\n'),
      from: 'Ann <ann@remote.test>',
      to: 'hooks@acme.test',
      subject: 'Grüße',
      'x-note': 'one\ntwo',
    };
    const expectedList = [
      { name: 'received', value: unfolded[0] },
      { name: 'received', value: unfolded[1] },
      { name: 'from', value: 'Ann <ann@remote.test>' },
      { name: 'received', value: unfolded[2] },
      { name: 'to', value: 'hooks@acme.test' },
      { name: 'subject', value: 'Grüße' },
      { name: 'x-note', value: 'one' },
      { name: 'x-note', value: 'two' },
    ];
    for (const email of [injected.body, (await acme.test.get(`/v1/emails/received/${id}`)).body]) {
      expectStringHeaders(email);
      expect(email.headers).toEqual(expectedHeaders);
      expect(email.header_list).toEqual(expectedList);
    }

    clock.advance(30 * DAY);
    expect(await runRetention()).toBeGreaterThanOrEqual(1);
    const after = (await acme.test.get(`/v1/emails/received/${id}`)).body;
    expect(after).toMatchObject({ purged_at: clock.now().toISOString(), text_body: null, html_body: null });
    expectStringHeaders(after);
    expect(after.headers).toEqual(expectedHeaders);
    expect(after.header_list).toEqual(expectedList);
    const listed = (await acme.test.get('/v1/emails/received?limit=100')).body.data.find(
      (e: any) => e.id === id,
    );
    expect(listed.headers).toEqual(expectedHeaders);
    const raw410 = await acme.test.get(`/v1/emails/received/${id}/raw`);
    expect(raw410.status).toBe(410);
  });

  it('stored before headers were kept apart: read from the content, then kept apart when the retention ends, for every organization it was for', async () => {
    const { store, readYourWrites, blobs } = svc.postline.services;
    const at = clock.now().getTime();
    const rawKey = await blobs.put(Buffer.from(raw.replace(/\n/g, '\r\n')), at);
    // The content blob as it was written then: bodies and headers together, a repeated header as a list.
    const contentKey = await blobs.put(
      Buffer.from(
        JSON.stringify({
          text: 'body',
          html: null,
          headers: { received: unfolded, from: 'Ann <ann@remote.test>', subject: 'Grüße' },
        }),
      ),
      at,
    );
    // The message arrived for two organizations: two records sharing its files, as the MX wrote them then.
    const ids: string[] = [];
    for (const org of [acme, other]) {
      const receivedEmailId = newId('in', clock.now().getTime());
      const { headersKey: _, ...data } = {
        ...receivedEmail,
        receivedEmailId,
        orgId: org.orgId,
        mode: 'test' as const,
        domainId: null,
        domain: null,
        rawKey,
        contentKey,
        attachments: [],
        receivedAt: clock.now().toISOString(),
        headersKey: undefined,
      };
      const appended = await store.append(
        receivedEmailStream(receivedEmailId),
        [{ type: 'InboundEmailReceived', data, metadata: { orgId: org.orgId, mode: 'test', actor: 'mx' } }],
        { expectedRevision: 'no_stream' },
      );
      await readYourWrites.waitFor(['received_emails'], appended.position);
      ids.push(receivedEmailId);
    }

    const expectedHeaders = {
      received: unfolded.join('\n'),
      from: 'Ann <ann@remote.test>',
      subject: 'Grüße',
    };
    const expectedList = [
      ...unfolded.map((value) => ({ name: 'received', value })),
      { name: 'from', value: 'Ann <ann@remote.test>' },
      { name: 'subject', value: 'Grüße' },
    ];
    const before = (await acme.test.get(`/v1/emails/received/${ids[0]}`)).body;
    expectStringHeaders(before);
    expect(before.headers).toEqual(expectedHeaders);
    expect(before.header_list).toEqual(expectedList);

    clock.advance(30 * DAY);
    expect(await runRetention()).toBeGreaterThanOrEqual(2);
    expect(await blobs.exists(contentKey)).toBe(false);
    expect(await blobs.exists(rawKey)).toBe(false);
    for (const [org, id] of [
      [acme, ids[0]],
      [other, ids[1]],
    ] as const) {
      const after = (await org.test.get(`/v1/emails/received/${id}`)).body;
      expect(after.purged_at).toBe(clock.now().toISOString());
      expect(after.headers).toEqual(expectedHeaders);
      expect(after.header_list).toEqual(expectedList);
      const types = (await store.readStream(receivedEmailStream(id))).map((e) => e.type);
      expect(types).toEqual(['InboundEmailReceived', 'ReceivedEmailHeadersKept', 'ReceivedEmailPurged']);
    }
  });
});
