import { describe, expect, it } from 'vitest';
import { addSuppression } from '../../write-side/suppressions/suppression.commands.ts';
import { type TestOrg, useTwoOrgs } from '../support/service.ts';
import { expectValidationErrors } from '../support/validation.ts';

const { svc, orgs } = useTwoOrgs();

const suppressed = (org: TestOrg, mode: 'live' | 'test', address: string) =>
  svc.postline.services.caches.suppressed.get({ orgId: org.orgId, mode: mode }, address);

describe('suppressions API', () => {
  it('adds an address (reason manual by default) and lists it', async () => {
    const r = await orgs.acme.live.post('/v1/suppressions', { email: 'ann@example.com' });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      object: 'suppression',
      email: 'ann@example.com',
      reason: 'manual',
      source_email_id: null,
      created: true,
    });
    expect(r.body.id).toMatch(/^sup_/);
    expect(Date.parse(r.body.created_at)).not.toBeNaN();
    const list = await orgs.acme.live.get('/v1/suppressions');
    expect(list.status).toBe(200);
    const { created: _, ...listed } = r.body;
    expect(list.body.data).toContainEqual(listed);
    expect(list.body.has_more).toBe(false);
    expect(await suppressed(orgs.acme, 'live', 'ANN@Example.COM')).toBe(true);
  });

  it('answers 201 with the existing record for an address already suppressed, in any letter case, saying so', async () => {
    const first = await orgs.acme.live.post('/v1/suppressions', {
      email: 'Bob@Example.com',
      reason: 'manual',
    });
    expect([first.status, first.body.created]).toEqual([201, true]);
    const again = await orgs.acme.live.post('/v1/suppressions', { email: '  bob@EXAMPLE.com ' });
    expect(again.status).toBe(201);
    expect(again.body).toEqual({ ...first.body, created: false });
    const list = await orgs.acme.live.get('/v1/suppressions?limit=100');
    expect(list.body.data.filter((s: any) => s.email.toLowerCase() === 'bob@example.com')).toHaveLength(1);
  });

  it('deletes by id, after which sends to the address are allowed again', async () => {
    const s = (await orgs.acme.live.post('/v1/suppressions', { email: 'carl@example.com' })).body;
    const del = await orgs.acme.live.delete(`/v1/suppressions/${s.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: s.id, deleted: true });
    expect(await suppressed(orgs.acme, 'live', 'carl@example.com')).toBe(false);
    expect(
      (await orgs.acme.live.get('/v1/suppressions?limit=100')).body.data.map((x: any) => x.id),
    ).not.toContain(s.id);
    const again = await orgs.acme.live.delete(`/v1/suppressions/${s.id}`);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('not_found');
    const readded = await orgs.acme.live.post('/v1/suppressions', { email: 'carl@example.com' });
    expect([readded.status, readded.body.created]).toEqual([201, true]);
    expect(readded.body.id).not.toBe(s.id);
  });

  it('validates the body', async () => {
    const cases: [unknown, string][] = [
      [{}, 'email'],
      [{ email: '' }, 'email'],
      [{ email: 'not-an-address' }, 'email'],
      [{ email: 42 }, 'email'],
      [{ email: `${'a'.repeat(250)}@example.com` }, 'email'],
      [{ email: 'x@example.com', reason: 'hard_bounce' }, 'reason'],
      [{ email: 'x@example.com', reason: 'complaint' }, 'reason'],
      [{ email: 'x@example.com', extra: true }, 'extra'],
      [['x@example.com'], 'body'],
    ];
    await expectValidationErrors((body) => orgs.acme.live.post('/v1/suppressions', body), cases);
    const malformed = await orgs.acme.live.post('/v1/suppressions', '{"email":');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('malformed_json');
  });

  it('accepts every address that sending accepts, an IDN domain matching in either spelling', async () => {
    const org = orgs.acme.test;
    const idn = await org.post('/v1/suppressions', { email: 'Ann@Bücher.de' });
    expect(idn.status).toBe(201);
    // The form sending records and checks: local part as given, domain in ASCII and lower case.
    expect(idn.body).toMatchObject({ email: 'Ann@xn--bcher-kva.de', created: true });
    const puny = await org.post('/v1/suppressions', { email: 'ann@XN--BCHER-KVA.de' });
    expect([puny.status, puny.body.id, puny.body.created]).toEqual([201, idn.body.id, false]);
    expect(await suppressed(orgs.acme, 'test', 'ann@xn--bcher-kva.de')).toBe(true);
    const send = await org.post('/v1/emails', {
      from: 'me@example.com',
      to: ['ann@bücher.de'],
      subject: 'Hi',
      html: '<p>Hi</p>',
    });
    expect([send.status, send.body.error?.code]).toEqual([422, 'all_recipients_suppressed']);

    for (const email of [
      'first=last@example.com',
      'a/b@example.com',
      '"john doe"@example.com',
      'ivan@example.xn--p1ai',
    ]) {
      const r = await org.post('/v1/suppressions', { email });
      expect([r.status, r.body.email], email).toEqual([201, email]);
    }
    await expectValidationErrors(
      (body) => org.post('/v1/suppressions', body),
      [
        [{ email: 'ann@example.com.' }, 'email'],
        [{ email: 'ann@-bad-.example' }, 'email'],
        [{ email: `${'a'.repeat(65)}@example.com` }, 'email'],
      ],
    );
  });

  it('filters by reason and paginates', async () => {
    const org = await svc.createOrg('pro');
    const meta = { orgId: org.orgId, mode: 'live' as const, actor: 'system' };
    const services = svc.postline.services;
    await addSuppression(services, meta, {
      email: 'bounce@example.com',
      reason: 'hard_bounce',
      sourceEmailId: 'em_1',
    });
    await addSuppression(services, meta, { email: 'spam@example.com', reason: 'complaint' });
    const last = await addSuppression(services, meta, {
      email: 'bounce2@example.com',
      reason: 'hard_bounce',
    });
    await services.readYourWrites.waitFor(['suppressions'], last.position);
    await org.live.post('/v1/suppressions', { email: 'manual@example.com' });

    const bounces = await org.live.get('/v1/suppressions?reason=hard_bounce');
    expect(bounces.body.data.map((s: any) => s.email)).toEqual(['bounce2@example.com', 'bounce@example.com']);
    expect(bounces.body.data[1].source_email_id).toBe('em_1');
    expect(
      (await org.live.get('/v1/suppressions?reason=complaint')).body.data.map((s: any) => s.email),
    ).toEqual(['spam@example.com']);
    const page = await org.live.get('/v1/suppressions?limit=3');
    expect(page.body.data).toHaveLength(3);
    expect(page.body.has_more).toBe(true);
    const rest = await org.live.get(`/v1/suppressions?limit=3&starting_after=${page.body.data[2].id}`);
    expect(rest.body.data.map((s: any) => s.email)).toEqual(['bounce@example.com']);
    expect(rest.body.has_more).toBe(false);
    const bad = await org.live.get('/v1/suppressions?reason=unsubscribed');
    expect(bad.status).toBe(422);
    expect(bad.body.error.message).toContain('reason');
  });

  it("answers 404 for unknown ids and another organization's", async () => {
    const s = (await orgs.acme.live.post('/v1/suppressions', { email: 'dora@example.com' })).body;
    expect((await orgs.other.live.delete(`/v1/suppressions/${s.id}`)).status).toBe(404);
    expect((await orgs.other.live.get('/v1/suppressions')).body.data.map((x: any) => x.id)).not.toContain(
      s.id,
    );
    expect(await suppressed(orgs.other, 'live', 'dora@example.com')).toBe(false);
    expect((await orgs.acme.live.delete('/v1/suppressions/sup_00000000000000000000000000')).status).toBe(404);
    expect((await orgs.acme.live.delete('/v1/suppressions/whatever')).status).toBe(404);
    expect(await suppressed(orgs.acme, 'live', 'dora@example.com')).toBe(true);
  });

  it('keeps test and live lists apart', async () => {
    const live = (await orgs.acme.live.post('/v1/suppressions', { email: 'eve@example.com' })).body;
    expect(await suppressed(orgs.acme, 'test', 'eve@example.com')).toBe(false);
    expect((await orgs.acme.test.get('/v1/suppressions')).body.data.map((x: any) => x.id)).not.toContain(
      live.id,
    );
    expect((await orgs.acme.test.delete(`/v1/suppressions/${live.id}`)).status).toBe(404);
    const test = await orgs.acme.test.post('/v1/suppressions', { email: 'eve@example.com' });
    expect(test.status).toBe(201);
    expect(test.body.id).not.toBe(live.id);
  });
});

describe('suppressions from the delivery path', () => {
  it('adds hard_bounce and complaint suppressions idempotently', async () => {
    const services = svc.postline.services;
    const meta = { orgId: orgs.acme.orgId, mode: 'live' as const, actor: 'system' };
    const first = await addSuppression(services, meta, {
      email: 'Fred@Example.com',
      reason: 'hard_bounce',
      sourceEmailId: 'em_9',
    });
    expect(first.created).toBe(true);
    expect(first.suppression).toMatchObject({
      email: 'Fred@Example.com',
      reason: 'hard_bounce',
      sourceEmailId: 'em_9',
    });
    const again = await addSuppression(services, meta, { email: 'fred@example.com', reason: 'complaint' });
    expect(again.created).toBe(false);
    expect(again.suppression).toEqual(first.suppression);
    await services.readYourWrites.waitFor(['suppressions'], first.position);
    expect(await suppressed(orgs.acme, 'live', 'FRED@example.com')).toBe(true);
    // Concurrent adds of one address: one record, whichever process wins.
    const racing = await Promise.all(
      ['gina@example.com', 'GINA@example.com', 'Gina@Example.com'].map((email) =>
        addSuppression(services, meta, { email, reason: 'hard_bounce' }),
      ),
    );
    expect(racing.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(racing.map((r) => r.suppression.suppressionId)).size).toBe(1);
  });
});
