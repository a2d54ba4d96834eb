import { beforeAll, describe, expect, it } from 'vitest';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import { mxClient } from '../support/inbound.ts';
import { PATIENCE } from '../support/patience.ts';
import type { ApiClient, TestOrg } from '../support/service.ts';

/**
 * A message the MX answered 451 after recording it for some of its organizations, sent again by its sender
 * (docs/receiving.md, "Retries"): each organization has it once. A different message, even to the same addresses,
 * is a message of its own.
 */

let acme: TestOrg;
let globex: TestOrg;
let mxPort: number;
const { svc, dns } = useDnsService({ env: { SMTP_MX_PORT: '0' } });
beforeAll(async () => {
  mxPort = svc.postline.smtp!.mxPort!;
  acme = await svc.createOrg('pro');
  globex = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, dns, 'acme-retry.test', { inbound_enabled: true });
  await addVerifiedDomain(globex.live, dns, 'globex-retry.test', { inbound_enabled: true });
});

// Acme's recipient first: its record is appended before Globex's.
const envelope = { from: 'ann@remote.test', to: ['support@acme-retry.test', 'sales@globex-retry.test'] };
const message = (messageId: string) =>
  [
    'From: Ann <ann@remote.test>',
    'To: support@acme-retry.test, sales@globex-retry.test',
    'Subject: Sent twice',
    `Message-ID: <${messageId}@remote.test>`,
    'Date: Wed, 25 Nov 2026 10:00:00 +0000',
    '',
    'Hello both',
    '',
  ].join('\r\n');
const send = (raw: string) =>
  mxClient(mxPort)
    .sendMail({ envelope, raw })
    .then(
      (info) => info.response,
      (error: { response?: string }) => error.response,
    );

/** The received emails of `org` with the subject, once `count` of them are listed (the read model follows). */
async function listed(org: ApiClient, count: number) {
  let found: any[] = [];
  await expect
    .poll(async () => {
      const all = (await org.get('/v1/emails/received?limit=100')).body.data;
      found = all.filter((e: any) => e.subject === 'Sent twice');
      return found.length;
    }, PATIENCE)
    .toBe(count);
  return found;
}

/** Refuses Globex's received emails in the log itself, as a failing database would, until `restore` is called. */
async function refuseGlobexRecords() {
  const db = svc.postline.services.db;
  await db.exec(
    `ALTER TABLE events ADD CONSTRAINT refuse_globex_inbound CHECK (type <> 'InboundEmailReceived' OR metadata->>'orgId' <> '${globex.orgId}') NOT VALID`,
  );
  return () => db.exec('ALTER TABLE events DROP CONSTRAINT refuse_globex_inbound');
}

describe('a message for two organizations whose second record fails', () => {
  it('answers 451; the retry answers 250 and each organization has the message once', async () => {
    const raw = message('retried');
    const restore = await refuseGlobexRecords();
    let first: string | undefined;
    try {
      first = await send(raw);
    } finally {
      await restore();
    }
    expect(first).toMatch(/^451 4\.3\.0 /);
    expect(await send(raw)).toBe('250 2.0.0 Ok: received');

    // Globex's record comes after Acme's in the log: once it is listed, a second one of Acme's would be too.
    const [theirs] = await listed(globex.live, 1);
    const [mine] = await listed(acme.live, 1);
    expect(mine.envelope.to).toEqual(['support@acme-retry.test']);
    expect(theirs.envelope.to).toEqual(['sales@globex-retry.test']);
    expect(theirs.id).toMatch(/^in_[0-9a-z]{26}$/);
    expect(theirs.text_body).toBe('Hello both\n');

    // Sent once more (its 250 lost on the way, say): still once each.
    expect(await send(raw)).toBe('250 2.0.0 Ok: received');
    const log = await svc.postline.services.store.readStream(`inbound-${mine.id}`);
    expect(log.map((e) => e.type)).toEqual(['InboundEmailReceived']);

    // Another message to the same addresses, alike but for its Message-ID, is recorded for each.
    expect(await send(message('another'))).toBe('250 2.0.0 Ok: received');
    await listed(globex.live, 2);
    const both = await listed(acme.live, 2);
    expect(both.map((e) => e.message_id)).toEqual(['<another@remote.test>', '<retried@remote.test>']);
  });
});

describe('test mode', () => {
  it('records a message injected twice twice: each injection is an arrival of its own', async () => {
    const raw = 'From: Tess <tess@remote.test>\nSubject: Injected twice\n\nHello';
    const one = await acme.test.post('/v1/emails/received', { raw, to: ['hooks@acme-retry.test'] });
    const two = await acme.test.post('/v1/emails/received', { raw, to: ['hooks@acme-retry.test'] });
    expect([one.status, two.status]).toEqual([201, 201]);
    expect(two.body.id).not.toBe(one.body.id);
  });
});
