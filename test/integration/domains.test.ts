import { beforeAll, describe, expect, it } from 'vitest';
import { domainNameStream } from '../../domain/domains/domain.events.ts';
import { findDomainById, findSendingDomain } from '../../read-side/domains/domains.queries.ts';
import { type TestOrg, useTestService } from '../support/service.ts';
import { expectValidationErrors } from '../support/validation.ts';

let acme: TestOrg;
let other: TestOrg;

const svc = useTestService(() => ({
  env: {
    POSTLINE_MX_HOST: 'mx.postline.test',
    POSTLINE_SPF_INCLUDE: 'spf.postline.test',
    POSTLINE_TRACKING_HOST: 'track.postline.test',
  },
}));
beforeAll(async () => {
  acme = await svc.createOrg('business');
  other = await svc.createOrg('business');
});

let n = 0;
const unique = (base = 'example.com') => `d${++n}-${Date.now().toString(36)}.${base}`;

describe('POST /v1/domains', () => {
  it('creates a pending domain with its DNS records', async () => {
    const name = unique();
    const r = await acme.live.post('/v1/domains', { name });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      object: 'domain',
      name,
      status: 'pending',
      region: 'eu',
      open_tracking: false,
      click_tracking: false,
      inbound_enabled: false,
      impressum: null,
      verified_at: null,
    });
    expect(r.body.id).toMatch(/^dom_[0-9a-z]{26}$/);
    const [dkim, ...others] = r.body.dns_records;
    expect(dkim).toMatchObject({
      type: 'TXT',
      purpose: 'dkim',
      required: true,
      status: 'pending',
      found: null,
    });
    expect(dkim.name).toMatch(
      new RegExp(`^pl\\d{6}[0-9a-f]{6}\\._domainkey\\.${name.replace(/\./g, '\\.')}$`),
    );
    expect(dkim.value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]+=*$/);
    const spf = 'v=spf1 include:spf.postline.test ~all';
    const pending = { status: 'pending', found: null };
    // Required: DKIM and SPF on the domain itself. The custom return path (MX and SPF on bounces.<name>) is optional.
    expect(others).toEqual([
      { type: 'TXT', name, value: spf, purpose: 'spf', required: true, ...pending },
      {
        type: 'TXT',
        name: `_dmarc.${name}`,
        value: 'v=DMARC1; p=none;',
        purpose: 'dmarc',
        required: false,
        ...pending,
      },
      {
        type: 'CNAME',
        name: `track.${name}`,
        value: 'track.postline.test',
        purpose: 'tracking',
        required: false,
        ...pending,
      },
      {
        type: 'MX',
        name: `bounces.${name}`,
        value: 'mx.postline.test',
        priority: 10,
        purpose: 'return_path',
        required: false,
        ...pending,
      },
      {
        type: 'TXT',
        name: `bounces.${name}`,
        value: spf,
        purpose: 'return_path',
        required: false,
        ...pending,
      },
    ]);

    const got = await acme.live.get(`/v1/domains/${r.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(r.body);
  });

  it('generates a 2048-bit key and keeps the private key sealed', async () => {
    const r = await acme.live.post('/v1/domains', { name: unique() });
    const p = r.body.dns_records.find((d: any) => d.purpose === 'dkim').value.split('p=')[1];
    const { createPublicKey } = await import('node:crypto');
    const key = createPublicKey({ key: Buffer.from(p, 'base64'), format: 'der', type: 'spki' });
    expect(key.asymmetricKeyDetails?.modulusLength).toBe(2048);
    const events = await svc.postline.services.store.readStream(`domain-${r.body.id}`);
    expect(JSON.stringify(events)).not.toContain('PRIVATE KEY');
    const row = await findDomainById(
      svc.postline.services.db,
      { orgId: acme.orgId, mode: 'live' },
      r.body.id,
    );
    const pem = svc.postline.services.secrets.open(row!.sealed_dkim_private_key);
    expect(pem).toContain('BEGIN PRIVATE KEY');
  });

  it('adds the inbound MX record when inbound is enabled, and stores the settings', async () => {
    const name = unique();
    const r = await acme.live.post('/v1/domains', {
      name,
      region: 'eu',
      open_tracking: true,
      click_tracking: true,
      inbound_enabled: true,
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ open_tracking: true, click_tracking: true, inbound_enabled: true });
    expect(r.body.dns_records.find((d: any) => d.purpose === 'inbound')).toMatchObject({
      type: 'MX',
      name,
      value: 'mx.postline.test',
      priority: 10,
      required: false,
    });
  });

  it('normalises the name: lower case, punycode, no trailing dot', async () => {
    const base = unique('example');
    const r = await acme.live.post('/v1/domains', { name: `Bücher.${base.toUpperCase()}.` });
    expect(r.status).toBe(201);
    expect(r.body.name).toBe(`xn--bcher-kva.${base}`);
  });

  it('rejects names that are no host names, naming the field', async () => {
    for (const name of [
      'localhost',
      '192.168.1.1',
      '[::1]',
      'exa_mple.com',
      `${'a'.repeat(64)}.com`,
      'bad name.com',
      '',
      'a.com/x',
      42,
      null,
    ]) {
      const r = await acme.live.post('/v1/domains', { name });
      expect(r.status, String(name)).toBe(422);
      expect(r.body.error).toMatchObject({ type: 'validation_error', code: 'validation_error' });
      expect(r.body.error.message).toContain('`name`');
    }
    const missing = await acme.live.post('/v1/domains', {});
    expect(missing.status).toBe(422);
    expect(missing.body.error.message).toBe('`name`: is required');
  });

  it('accepts only the EU region', async () => {
    const r = await acme.live.post('/v1/domains', { name: unique(), region: 'us' });
    expect(r.status).toBe(422);
    expect(r.body.error.message).toMatch(/`region`.*EU/);
  });

  it('rejects malformed bodies', async () => {
    const cases: [unknown, string][] = [
      [{ name: unique(), open_tracking: 'yes' }, 'open_tracking'],
      [{ name: unique(), click_tracking: 1 }, 'click_tracking'],
      [{ name: unique(), inbound_enabled: null }, 'inbound_enabled'],
      [{ name: unique(), extra: true }, 'extra'],
      [[{ name: unique() }], 'body'],
    ];
    await expectValidationErrors((body) => acme.live.post('/v1/domains', body), cases);
    const broken = await acme.live.post('/v1/domains', '{"name": ', { 'content-type': 'application/json' });
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('malformed_json');
  });

  it('refuses a name the organization already has (409 domain_exists)', async () => {
    const name = unique();
    expect((await acme.live.post('/v1/domains', { name })).status).toBe(201);
    const again = await acme.live.post('/v1/domains', { name: name.toUpperCase() });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ type: 'conflict_error', code: 'domain_exists' });
  });

  it('lets another organization, and the test mode, add a name nobody has verified', async () => {
    const name = unique();
    expect((await acme.live.post('/v1/domains', { name })).status).toBe(201);
    expect((await other.live.post('/v1/domains', { name })).status).toBe(201);
    expect((await acme.test.post('/v1/domains', { name })).status).toBe(201);
  });
});

describe('a name registered by a request still in flight', () => {
  // A request registers the name, then writes its domain: between the two, another request must not take the
  // registration for one a crash left behind.
  const registerOnly = async (org: TestOrg, name: string, at: Date) =>
    svc.postline.services.store.append(
      domainNameStream(name),
      [
        {
          type: 'DomainNameRegistered',
          data: {
            name,
            domainId: 'dom_inflight',
            orgId: org.orgId,
            mode: 'live',
            registeredAt: at.toISOString(),
          },
          metadata: { orgId: org.orgId, mode: 'live', actor: 'test' },
        },
      ],
      { expectedRevision: 'no_stream' },
    );

  it('is respected while young: the second request gets 409 domain_exists', async () => {
    const name = unique();
    await registerOnly(acme, name, new Date());
    const r = await acme.live.post('/v1/domains', { name });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('domain_exists');
  });

  it('is freed once old: a crash left it', async () => {
    const name = unique();
    await registerOnly(acme, name, new Date(Date.now() - 10 * 60_000));
    expect((await acme.live.post('/v1/domains', { name })).status).toBe(201);
  });
});

describe('plan quota', () => {
  it('allows one domain on Free and ten on Pro, per mode', async () => {
    const free = await svc.createOrg('free');
    const first = unique();
    expect((await free.live.post('/v1/domains', { name: first })).status).toBe(201);
    // The name it has already is a 409 first, on every plan, at its limit too.
    const again = await free.live.post('/v1/domains', { name: first });
    expect([again.status, again.body.error.code]).toEqual([409, 'domain_exists']);
    const over = await free.live.post('/v1/domains', { name: unique() });
    expect(over.status).toBe(422);
    expect(over.body.error).toMatchObject({ type: 'quota_error', code: 'plan_limit_exceeded' });
    expect(over.body.error.message).toMatch(/free plan includes 1 domain/);
    expect((await free.test.post('/v1/domains', { name: unique() })).status).toBe(201);

    const pro = await svc.createOrg('pro');
    for (let i = 0; i < 10; i++)
      expect((await pro.live.post('/v1/domains', { name: unique() })).status).toBe(201);
    expect((await pro.live.post('/v1/domains', { name: unique() })).body.error.code).toBe(
      'plan_limit_exceeded',
    );
  });

  it('stops counting a deleted domain', async () => {
    const free = await svc.createOrg('free');
    const first = await free.live.post('/v1/domains', { name: unique() });
    expect((await free.live.delete(`/v1/domains/${first.body.id}`)).status).toBe(200);
    expect((await free.live.post('/v1/domains', { name: unique() })).status).toBe(201);
  });
});

describe('GET /v1/domains', () => {
  it('lists newest first with cursor pagination', async () => {
    const org = await svc.createOrg('business');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await org.live.post('/v1/domains', { name: unique() })).body.id);
    const page1 = await org.live.get('/v1/domains?limit=2');
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((d: any) => d.id)).toEqual([ids[2], ids[1]]);
    expect(page1.body.has_more).toBe(true);
    expect(page1.body.data[0].dns_records.length).toBeGreaterThan(0);
    const page2 = await org.live.get(`/v1/domains?limit=2&starting_after=${ids[1]}`);
    expect(page2.body.data.map((d: any) => d.id)).toEqual([ids[0]]);
    expect(page2.body.has_more).toBe(false);
    const back = await org.live.get(`/v1/domains?limit=2&ending_before=${ids[0]}`);
    expect(back.body.data.map((d: any) => d.id)).toEqual([ids[2], ids[1]]);
  });

  it('validates the query', async () => {
    for (const q of ['limit=0', 'limit=101', 'limit=x', 'starting_after=%20', 'color=red']) {
      const r = await acme.live.get(`/v1/domains?${q}`);
      expect(r.status, q).toBe(422);
    }
  });

  it('keeps organizations and modes apart', async () => {
    const mine = await acme.live.post('/v1/domains', { name: unique() });
    const otherList = await other.live.get('/v1/domains?limit=100');
    expect(otherList.body.data.map((d: any) => d.id)).not.toContain(mine.body.id);
    const testList = await acme.test.get('/v1/domains?limit=100');
    expect(testList.body.data.map((d: any) => d.id)).not.toContain(mine.body.id);
  });
});

describe('GET /v1/domains/{id}', () => {
  it("answers 404 for unknown ids, another organization's and the other mode's", async () => {
    const mine = await acme.live.post('/v1/domains', { name: unique() });
    for (const [client, id] of [
      [acme.live, 'dom_00000000000000000000000000'],
      [acme.live, 'not-an-id'],
      [other.live, mine.body.id],
      [acme.test, mine.body.id],
    ] as const) {
      const r = await client.get(`/v1/domains/${id}`);
      expect(r.status, id).toBe(404);
      expect(r.body.error).toMatchObject({ type: 'not_found_error', code: 'not_found' });
    }
  });
});

describe('PATCH /v1/domains/{id}', () => {
  const impressum = {
    company_name: 'Acme GmbH',
    address: 'Hauptstraße 1\n10115 Berlin',
    country: 'de',
    email: 'legal@acme.example',
    phone: '+49 30 1234567',
    representative: 'Erika Mustermann',
    register_entry: 'Amtsgericht Charlottenburg HRB 123456',
    vat_id: 'DE123456789',
  };

  it('changes tracking, inbound and the impressum', async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    const r = await acme.live.patch(`/v1/domains/${d.body.id}`, {
      open_tracking: true,
      inbound_enabled: true,
      impressum,
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      open_tracking: true,
      click_tracking: false,
      inbound_enabled: true,
      impressum: { ...impressum, country: 'DE' },
    });
    expect(r.body.dns_records.filter((x: any) => x.purpose === 'inbound')).toHaveLength(1);
    expect((await acme.live.get(`/v1/domains/${d.body.id}`)).body).toEqual(r.body);

    const off = await acme.live.patch(`/v1/domains/${d.body.id}`, {
      inbound_enabled: false,
      impressum: null,
    });
    expect(off.body.inbound_enabled).toBe(false);
    expect(off.body.impressum).toBeNull();
    expect(off.body.dns_records.some((x: any) => x.purpose === 'inbound')).toBe(false);

    const same = await acme.live.patch(`/v1/domains/${d.body.id}`, {});
    expect(same.status).toBe(200);
    expect(same.body).toEqual(off.body);
  });

  it('shows the tracking settings to senders', async () => {
    const name = unique();
    const d = await acme.live.post('/v1/domains', { name });
    await acme.live.patch(`/v1/domains/${d.body.id}`, { click_tracking: true });
    const sending = await findSendingDomain(
      svc.postline.services.db,
      { orgId: acme.orgId, mode: 'live' },
      name.toUpperCase(),
    );
    expect(sending).toMatchObject({
      id: d.body.id,
      name,
      status: 'pending',
      canSendLive: false,
      openTracking: false,
      clickTracking: true,
      returnPathDomain: `bounces.${name}`,
      customReturnPath: false,
      trackingDomain: `track.${name}`,
    });
    expect(
      await findSendingDomain(svc.postline.services.db, { orgId: acme.orgId, mode: 'test' }, name),
    ).toBeNull();
    expect(
      await findSendingDomain(svc.postline.services.db, { orgId: other.orgId, mode: 'live' }, name),
    ).toBeNull();
  });

  it('validates the body, naming the field', async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    const cases: [unknown, string][] = [
      [{ open_tracking: 'true' }, 'open_tracking'],
      [{ name: 'other.com' }, 'name'],
      [{ impressum: 'Acme' }, 'impressum'],
      [{ impressum: { ...impressum, company_name: '' } }, 'impressum.company_name'],
      [{ impressum: { ...impressum, email: 'nope' } }, 'impressum.email'],
      [{ impressum: { ...impressum, country: 'Germany' } }, 'impressum.country'],
      [{ impressum: { ...impressum, vat_id: '123' } }, 'impressum.vat_id'],
      [{ impressum: { ...impressum, phone: 'call me' } }, 'impressum.phone'],
      [{ impressum: { ...impressum, fax: '1' } }, 'impressum.fax'],
      [{ impressum: { company_name: 'Acme' } }, 'impressum.address'],
    ];
    await expectValidationErrors((body) => acme.live.patch(`/v1/domains/${d.body.id}`, body), cases);
  });

  it("answers 404 for another organization's or an unknown domain", async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    expect((await other.live.patch(`/v1/domains/${d.body.id}`, { open_tracking: true })).status).toBe(404);
    expect((await acme.test.patch(`/v1/domains/${d.body.id}`, { open_tracking: true })).status).toBe(404);
    expect(
      (await acme.live.patch('/v1/domains/dom_00000000000000000000000000', { open_tracking: true })).status,
    ).toBe(404);
    expect((await acme.live.get(`/v1/domains/${d.body.id}`)).body.open_tracking).toBe(false);
  });
});

describe('DELETE /v1/domains/{id}', () => {
  it('soft-deletes: gone from lists and look-ups, 404 afterwards', async () => {
    const name = unique();
    const d = await acme.live.post('/v1/domains', { name });
    const del = await acme.live.delete(`/v1/domains/${d.body.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: d.body.id, deleted: true });
    expect((await acme.live.get(`/v1/domains/${d.body.id}`)).status).toBe(404);
    expect((await acme.live.get('/v1/domains?limit=100')).body.data.map((x: any) => x.id)).not.toContain(
      d.body.id,
    );
    expect(
      await findSendingDomain(svc.postline.services.db, { orgId: acme.orgId, mode: 'live' }, name),
    ).toBeNull();
    expect((await acme.live.delete(`/v1/domains/${d.body.id}`)).status).toBe(404);
    expect((await acme.live.post(`/v1/domains/${d.body.id}/verify`)).status).toBe(404);
    expect((await acme.live.patch(`/v1/domains/${d.body.id}`, { open_tracking: true })).status).toBe(404);
  });

  it('keeps the name until the domain is purged', async () => {
    const name = unique();
    const d = await acme.live.post('/v1/domains', { name });
    await acme.live.delete(`/v1/domains/${d.body.id}`);
    const again = await acme.live.post('/v1/domains', { name });
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(/purged/);
  });

  it("answers 404 for another organization's domain", async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    expect((await other.live.delete(`/v1/domains/${d.body.id}`)).status).toBe(404);
    expect((await acme.test.delete(`/v1/domains/${d.body.id}`)).status).toBe(404);
    expect((await acme.live.get(`/v1/domains/${d.body.id}`)).status).toBe(200);
  });
});

describe('permissions', () => {
  it('lets only full_access keys manage domains', async () => {
    const key = await acme.live.post('/v1/api-keys', { name: 'sender', permission: 'sending_access' });
    const sender = svc.client(key.body.key);
    expect((await sender.get('/v1/domains')).status).toBe(403);
    expect((await sender.post('/v1/domains', { name: unique() })).status).toBe(403);
  });
});

describe('API keys restricted to a domain', () => {
  it('accepts a domain of the organization and mode, and refuses others with 422 domain_id', async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    const ok = await acme.live.post('/v1/api-keys', {
      name: 'scoped',
      permission: 'sending_access',
      domain_id: d.body.id,
    });
    expect(ok.status).toBe(201);
    expect(ok.body.domain_id).toBe(d.body.id);
    for (const [client, id] of [
      [other.live, d.body.id],
      [acme.test, d.body.id],
      [acme.live, 'dom_00000000000000000000000000'],
    ] as const) {
      const r = await client.post('/v1/api-keys', {
        name: 'scoped',
        permission: 'sending_access',
        domain_id: id,
      });
      expect(r.status).toBe(422);
      expect(r.body.error.message).toMatch(/`domain_id`.*not found/);
    }
    await acme.live.delete(`/v1/domains/${d.body.id}`);
    const deleted = await acme.live.post('/v1/api-keys', {
      name: 'scoped',
      permission: 'sending_access',
      domain_id: d.body.id,
    });
    expect(deleted.status).toBe(422);
  });
});
