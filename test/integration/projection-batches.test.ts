import { describe, expect, it } from 'vitest';
import { migrations } from '../../bin/migrations.ts';
import type { Database } from '../../platform/db/database.ts';
import { migrate } from '../../platform/db/migrations.ts';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import { sealPersonalData } from '../../platform/personal-data.ts';
import { projections } from '../../projections/all.ts';
import { receivedEmail } from '../fixtures/received-email.ts';
import { openTestDatabase } from '../support/databases.ts';

/** A fresh, migrated PostgreSQL database. */
async function migrated() {
  const opened = await openTestDatabase();
  await migrate(opened.db, migrations);
  return opened;
}

const meta = { orgId: 'org_1', mode: 'test' as const, actor: 'key_1' };
let position = 0;
const event = (type: string, data: Record<string, unknown>): StoredEvent => ({
  type,
  data,
  metadata: meta,
  streamId: `email-${data.emailId}`,
  revision: 0,
  position: String(++position).padStart(20, '0'),
  createdAt: new Date(Date.UTC(2026, 10, 22, 10, 0, position)),
});

const content = (emailId: string, extra: Record<string, unknown> = {}) => ({
  emailId,
  orgId: meta.orgId,
  mode: meta.mode,
  from: 'Acme <hello@acme.test>',
  to: [`${emailId}@rcpt.test`],
  cc: ['Carl <cc@rcpt.test>'],
  bcc: [],
  replyTo: [],
  subject: `Subject of ${emailId}`,
  html: '<p>Hi "there" \\ é</p>',
  text: null,
  headers: { 'X-Campaign': 'c1' },
  tags: ['a', 'b_c'],
  attachments: [],
  domainId: null,
  domainName: 'acme.test',
  suppressedRecipients: [],
  createdAt: '2026-11-22T10:00:00.000Z',
  ...extra,
});

/** A history with runs of new emails between other events, a replayed email, attachments and two months. */
const emailHistory: StoredEvent[] = [
  event('EmailQueued', content('em_1')),
  event('EmailQueued', content('em_2', { createdAt: '2026-10-31T23:59:59.000Z' })),
  event(
    'EmailScheduled',
    content('em_3', {
      sendAt: '2026-11-23T10:00:00.000Z',
      attachments: [
        { id: 'att_1', filename: 'a.pdf', contentType: 'application/pdf', size: 3, blobKey: 'k1' },
        {
          id: 'att_2',
          filename: 'i.png',
          contentType: 'image/png',
          contentId: 'logo',
          size: 4,
          blobKey: 'k2',
        },
      ],
    }),
  ),
  event('EmailSendingStarted', { emailId: 'em_1', startedAt: '2026-11-22T10:00:01.000Z' }),
  // Tags that an array literal must quote, and headers whose order is kept.
  event(
    'EmailQueued',
    content('em_4', {
      templateId: 'tpl_1',
      templateVersionId: 'tv_1',
      tags: ['a', 'quo"te', 'back\\slash', 'com,ma {x}', 'NULL', ''],
      headers: { 'X-Zeta': '1', 'X-Alpha': '2' },
    }),
  ),
  event('EmailQueued', content('em_1')), // a replay: no second row, not counted twice
  event('EmailCanceled', { emailId: 'em_3', canceledAt: '2026-11-22T10:00:02.000Z' }),
  event('EmailQueued', content('em_5')),
  // Delivery outcomes: runs with several changes to one email and one recipient, in order.
  event('EmailSent', { emailId: 'em_1', messageId: '<m1@acme.test>', sentAt: '2026-11-22T10:00:03.000Z' }),
  event('EmailDeliveryDelayed', {
    emailId: 'em_1',
    recipient: 'em_1@rcpt.test',
    attempt: 1,
    smtpCode: 451,
    smtpResponse: '451 try later',
    nextAttemptAt: '2026-11-22T10:05:00.000Z',
    delayedAt: '2026-11-22T10:00:04.000Z',
  }),
  event('EmailBounced', {
    emailId: 'em_1',
    recipient: 'cc@rcpt.test',
    bounceType: 'hard',
    smtpCode: 550,
    smtpResponse: '550 no such user',
    bouncedAt: '2026-11-22T10:00:05.000Z',
  }),
  event('EmailRescheduled', { emailId: 'em_4', sendAt: '2026-11-24T10:00:00.000Z' }),
  event('EmailDelivered', {
    emailId: 'em_1',
    recipient: 'em_1@rcpt.test',
    smtpResponse: '250 ok',
    deliveredAt: '2026-11-22T10:06:00.000Z',
  }),
  event('EmailOpened', {
    emailId: 'em_1',
    userAgent: 'ua',
    ip: '127.0.0.1',
    openedAt: '2026-11-22T10:07:00.000Z',
  }),
  event('EmailOpened', {
    emailId: 'em_1',
    userAgent: 'ua',
    ip: '127.0.0.1',
    openedAt: '2026-11-22T10:08:00.000Z',
  }),
  event('EmailClicked', { emailId: 'em_5', userAgent: 'ua', ip: '127.0.0.1', link: 'https://a.test/' }),
  event('EmailSendingStarted', { emailId: 'em_2', startedAt: '2026-11-22T10:09:00.000Z' }),
  event('EmailSent', { emailId: 'em_2', messageId: '<m2@acme.test>', sentAt: '2026-11-22T10:09:01.000Z' }),
  event('EmailComplained', {
    emailId: 'em_2',
    recipient: 'em_2@rcpt.test',
    complainedAt: '2026-11-22T10:10:00.000Z',
  }),
  event('EmailQueued', content('em_6')),
  event('EmailCanceled', { emailId: 'em_missing', canceledAt: '2026-11-22T10:11:00.000Z' }),
];

const contactEvent = (type: string, data: Record<string, unknown>): StoredEvent => ({
  ...event(type, data),
  streamId: `contact-${data.contactId}`,
});

/**
 * Contact events with runs of new contacts between others, their personal data sealed with keys made in `db`
 * (the keys are copied to the other databases before they apply them).
 */
async function contactHistory(db: Database): Promise<StoredEvent[]> {
  const created = async (contactId: string, audienceIds: string[]) =>
    contactEvent('ContactCreated', {
      contactId,
      orgId: meta.orgId,
      mode: meta.mode,
      emailKey: `key-${contactId}`,
      personal: await sealPersonalData(db, contactId, {
        email: `${contactId}@Example.org`,
        firstName: 'Ann',
        lastName: null,
        properties: { plan: 'gold', seats: 3 },
      }),
      unsubscribed: false,
      consentGivenAt: null,
      audienceIds,
      createdAt: '2026-11-22T10:00:00.000Z',
    });
  const updated = async (
    contactId: string,
    firstName: string,
    properties: Record<string, unknown>,
    at: string,
  ) =>
    contactEvent('ContactUpdated', {
      contactId,
      emailKey: `key-${contactId}`,
      personal: await sealPersonalData(db, contactId, {
        email: `${contactId}@example.org`,
        firstName,
        lastName: 'Lee',
        properties,
      }),
      unsubscribed: contactId === 'con_6',
      consentGivenAt: contactId === 'con_2' ? '2026-11-22T11:00:00.000Z' : null,
      updatedAt: `2026-11-22T11:0${at}:00.000Z`,
    });
  return [
    await created('con_1', ['aud_1']),
    await created('con_2', []),
    contactEvent('ContactAddedToAudience', { contactId: 'con_2', audienceId: 'aud_1', addedAt: 'T' }),
    await created('con_3', ['aud_1', 'aud_2']),
    await created('con_4', []),
    await created('con_5', ['aud_2']),
    contactEvent('ContactTopicSubscriptionChanged', {
      contactId: 'con_3',
      topicId: 'top_1',
      subscription: 'opt_out',
      changedAt: '2026-11-22T10:01:00.000Z',
    }),
    contactEvent('ContactUnsubscribed', { contactId: 'con_4', unsubscribedAt: '2026-11-22T10:02:00.000Z' }),
    contactEvent('ContactRemovedFromAudience', { contactId: 'con_3', audienceId: 'aud_2', removedAt: 'T' }),
    contactEvent('ContactDeleted', { contactId: 'con_5', deletedAt: '2026-11-22T10:03:00.000Z' }),
    await created('con_6', ['aud_2', 'aud_3']),
    // A deleted audience leaves its members, and a membership written after it is not added.
    { ...event('AudienceDeleted', { audienceId: 'aud_3', deletedAt: 'T' }), streamId: 'audience-aud_3' },
    await created('con_7', ['aud_3', 'aud_1']),
    contactEvent('ContactAddedToAudience', { contactId: 'con_1', audienceId: 'aud_3', addedAt: 'T' }),
    await created('con_8', []),
    // A run of changes and memberships (an import into another audience): one contact changed twice (its last
    // counts), one deleted, one created in the run; a membership of an audience deleted before is not added.
    await updated('con_1', 'Bea', { plan: 'silver' }, '1'),
    contactEvent('ContactAddedToAudience', { contactId: 'con_1', audienceId: 'aud_4', addedAt: 'T' }),
    await updated('con_2', 'Cy', {}, '2'),
    contactEvent('ContactAddedToAudience', { contactId: 'con_2', audienceId: 'aud_3', addedAt: 'T' }),
    await updated('con_1', 'Dee', { plan: 'bronze', seats: 4 }, '3'),
    await updated('con_5', 'Gone', {}, '4'),
    await created('con_9', ['aud_1']),
    contactEvent('ContactAddedToAudience', { contactId: 'con_9', audienceId: 'aud_4', addedAt: 'T' }),
    await updated('con_9', 'Fay', {}, '6'),
    await updated('con_6', 'Eve', { seats: 1 }, '5'),
  ];
}

/** Received emails in runs between other events: one replayed, one with text to escape, its headers kept, one purged. */
const inbound = (id: string, extra: Record<string, unknown> = {}) => ({
  ...event('InboundEmailReceived', { ...receivedEmail, receivedEmailId: id, ...extra }),
  streamId: `receivedemail-${id}`,
});
const receivedChange = (type: string, data: Record<string, unknown>) => ({
  ...event(type, data),
  streamId: `receivedemail-${data.receivedEmailId}`,
});
const receivedHistory: StoredEvent[] = [
  inbound('in_1'),
  inbound('in_2', { subject: `It's "quoted" \\ é`, headersKey: undefined }),
  receivedChange('ReceivedEmailHeadersKept', { receivedEmailId: 'in_2', headersKey: 'blob_kept' }),
  inbound('in_3'),
  inbound('in_1'),
  receivedChange('ReceivedEmailPurged', { receivedEmailId: 'in_3', purgedAt: '2026-06-01T00:00:00.000Z' }),
  inbound('in_4', { from: null, parseError: 'unreadable' }),
  inbound('in_5'),
];

async function dump(db: Database, tables: string[]) {
  const out: Record<string, unknown[]> = {};
  for (const table of tables) {
    // Rows in an order of their own: the order they went in is no part of a read model.
    const { rows } = await db.query(`SELECT * FROM ${table}`);
    out[table] = rows
      .map((row) => ({ row, key: JSON.stringify(row) }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .map((r) => r.row);
  }
  return out;
}

describe('projections with applyBatch', () => {
  for (const projection of projections.filter((p) => p.applyBatch)) {
    it(`${projection.name}: a batch, or batches of three, give the same rows as its events one by one`, async () => {
      const [{ db: one, dispose: disposeOne }, { db: many, dispose: disposeMany }, split] = await Promise.all(
        [migrated(), migrated(), migrated()],
      );
      try {
        let history = projection.name === 'received_emails' ? receivedHistory : emailHistory;
        if (projection.name === 'contacts') {
          history = await contactHistory(one);
          const { rows } = await one.query('SELECT subject, key FROM personal_data_keys');
          for (const db of [many, split.db])
            for (const r of rows)
              await db.query('INSERT INTO personal_data_keys (subject, key) VALUES ($1, $2)', [
                r.subject,
                r.key,
              ]);
        }
        await one.transaction(async (tx) => {
          for (const e of history) await projection.apply(tx, e);
        });
        await many.transaction((tx) => projection.applyBatch!(tx, history));
        // Some of these batches end with new emails, whose statement goes with the COMMIT.
        for (let i = 0; i < history.length; i += 3)
          await split.db.transaction((tx) => projection.applyBatch!(tx, history.slice(i, i + 3)));
        const expected = await dump(one, projection.tables);
        expect(Object.values(expected).every((rows) => rows.length > 0)).toBe(true);
        expect(await dump(many, projection.tables)).toEqual(expected);
        expect(await dump(split.db, projection.tables)).toEqual(expected);
      } finally {
        await disposeOne();
        await disposeMany();
        await split.dispose();
      }
    });
  }

  it('emails: writes the rows of new emails, counts a replayed email once and each month apart', async () => {
    const { db, dispose } = await migrated();
    try {
      const emails = projections.find((p) => p.name === 'emails')!;
      await db.transaction((tx) => emails.applyBatch!(tx, emailHistory));
      const usage = await db.query('SELECT month, emails FROM email_usage ORDER BY month');
      expect(usage.rows).toEqual([
        { month: '2026-10', emails: 1 },
        { month: '2026-11', emails: 5 },
      ]);
      const em4 = await db.query(
        'SELECT tags, headers, html, cc_addresses, template_id, status FROM emails WHERE id = $1',
        ['em_4'],
      );
      expect(Object.keys(em4.rows[0].headers)).toEqual(['X-Zeta', 'X-Alpha']);
      expect(em4.rows[0]).toEqual({
        tags: ['a', 'quo"te', 'back\\slash', 'com,ma {x}', 'NULL', ''],
        headers: { 'X-Zeta': '1', 'X-Alpha': '2' },
        html: '<p>Hi "there" \\ é</p>',
        cc_addresses: ['Carl <cc@rcpt.test>'],
        template_id: 'tpl_1',
        status: 'queued',
      });
      const statuses = await db.query(
        'SELECT id, status, lifecycle, opens, clicks, last_event FROM emails ORDER BY id',
      );
      expect(statuses.rows.map((r) => Object.values(r).join(' '))).toEqual([
        'em_1 delivered sent 2 0 EmailOpened',
        'em_2 complained sent 0 0 EmailComplained',
        'em_3 canceled canceled 0 0 EmailCanceled',
        'em_4 queued queued 0 0 EmailRescheduled',
        'em_5 queued queued 0 1 EmailClicked',
        'em_6 queued queued 0 0 EmailQueued',
      ]);
      const recipients = await db.query(`SELECT recipients FROM emails WHERE id = 'em_1'`);
      expect(recipients.rows[0].recipients).toEqual([
        {
          email: 'em_1@rcpt.test',
          status: 'delivered',
          // Delivered on the attempt after the one that failed, with the code of its answer.
          attempts: 2,
          smtp_code: 250,
          smtp_response: '250 ok',
          bounce_type: null,
          classification: null,
          next_attempt_at: null,
          updated_at: '2026-11-22T10:06:00.000Z',
        },
        {
          email: 'cc@rcpt.test',
          status: 'bounced',
          attempts: 0,
          smtp_code: 550,
          smtp_response: '550 no such user',
          bounce_type: 'hard',
          // Recorded without a class (an earlier version): the class the default rules give its reply.
          classification: 'invalid_recipient',
          next_attempt_at: null,
          updated_at: '2026-11-22T10:00:05.000Z',
        },
      ]);
      const att = await db.query('SELECT id, content_id, size FROM email_attachments ORDER BY id');
      expect(att.rows).toEqual([
        { id: 'att_1', content_id: null, size: 3 },
        { id: 'att_2', content_id: 'logo', size: 4 },
      ]);
    } finally {
      await dispose();
    }
  });

  it("new emails' text goes in as written, even what String.replace would read as a pattern ($&, $', $`)", async () => {
    const { db, dispose } = await migrated();
    try {
      const tricky = "Save $& now, $' or $` – it's \\ 100 $$";
      const emails = projections.find((p) => p.name === 'emails')!;
      const received = projections.find((p) => p.name === 'received_emails')!;
      // Batches of new emails only: their statements go with the COMMIT.
      await db.transaction((tx) =>
        emails.applyBatch!(tx, [event('EmailQueued', content('em_t', { subject: tricky, html: tricky }))]),
      );
      await db.transaction((tx) => received.applyBatch!(tx, [inbound('in_t', { subject: tricky })]));
      const email = await db.query('SELECT subject, html FROM emails WHERE id = $1', ['em_t']);
      expect(email.rows).toEqual([{ subject: tricky, html: tricky }]);
      const receivedRow = await db.query('SELECT subject FROM received_emails WHERE id = $1', ['in_t']);
      expect(receivedRow.rows).toEqual([{ subject: tricky }]);
    } finally {
      await dispose();
    }
  });
});
