import type { AudienceEvent } from '../domain/audiences/audience.events.ts';
import type { ContactEvent, ContactPersonalData } from '../domain/contacts/contact.events.ts';
import type { Transaction } from '../platform/db/database.ts';
import type { Stored } from '../platform/eventstore/types.ts';
import { openPersonalDataMany } from '../platform/personal-data.ts';
import type { Projection } from './projection.ts';
import { updateRow } from './rows.ts';

/** The personal columns of a contact's row. */
const personalRow = (p: ContactPersonalData) => ({
  email: p.email,
  email_lower: p.email.toLowerCase(),
  first_name: p.firstName,
  last_name: p.lastName,
  properties: JSON.stringify(p.properties),
});

type Created = Stored<Extract<ContactEvent, { type: 'ContactCreated' }>>;
type Updated = Stored<Extract<ContactEvent, { type: 'ContactUpdated' }>>;

/**
 * Each event's row: the columns both kinds of event set (the contact's id, personal data and consent), then the
 * event's own (`own`). None for a contact forgotten since.
 */
async function rowsOf<E extends Created | Updated, R>(
  tx: Transaction,
  events: E[],
  own: (data: E['data']) => R,
) {
  const opened = await openPersonalDataMany<ContactPersonalData>(
    tx,
    events.map((e) => ({ subject: e.data.contactId, sealed: e.data.personal })),
  );
  return events.flatMap((e, i) => {
    const p = opened[i];
    if (!p) return [];
    const d = e.data;
    const shared = {
      id: d.contactId,
      ...personalRow(p),
      unsubscribed: d.unsubscribed,
      consent_given_at: d.consentGivenAt,
    };
    return [{ ...shared, ...own(d) }];
  });
}

/**
 * New contacts (an import writes thousands in a row) in three statements: their keys, their rows, their
 * audiences.
 */
async function insertCreated(tx: Transaction, events: Created[]) {
  const rows = await rowsOf(tx, events, (d) => ({
    org_id: d.orgId,
    mode: d.mode,
    created_at: d.createdAt,
    audiences: d.audienceIds,
  }));
  if (rows.length === 0) return;
  await tx.query(
    `INSERT INTO contacts (id, email, email_lower, first_name, last_name, properties, unsubscribed,
       consent_given_at, org_id, mode, created_at, updated_at)
     SELECT id, email, email_lower, first_name, last_name, properties::jsonb, unsubscribed, consent_given_at,
       org_id, mode, created_at, created_at
     FROM json_to_recordset($1::json) AS x(id text, email text, email_lower text, first_name text,
       last_name text, properties text, unsubscribed boolean, consent_given_at timestamptz, org_id text,
       mode text, created_at timestamptz)
     ON CONFLICT (id) DO NOTHING`,
    [JSON.stringify(rows)],
  );
  await insertMembers(
    tx,
    rows.flatMap((r) => r.audiences.map((audience_id) => ({ contact_id: r.id, audience_id }))),
  );
}

/**
 * Changed contacts (an import that updates a list writes thousands in a row) in two statements: their keys and
 * their rows. Each change carries the whole of what it sets, so a contact changed twice takes its last.
 */
async function updateChanged(tx: Transaction, events: Updated[]) {
  const last = [...new Map(events.map((e) => [e.data.contactId, e])).values()];
  const rows = await rowsOf(tx, last, (d) => ({ updated_at: d.updatedAt }));
  if (rows.length === 0) return;
  await tx.query(
    `UPDATE contacts c SET email = x.email, email_lower = x.email_lower, first_name = x.first_name,
       last_name = x.last_name, properties = x.properties::jsonb, unsubscribed = x.unsubscribed,
       consent_given_at = x.consent_given_at, updated_at = x.updated_at
     FROM json_to_recordset($1::json) AS x(id text, email text, email_lower text, first_name text,
       last_name text, properties text, unsubscribed boolean, consent_given_at timestamptz, updated_at timestamptz)
     WHERE c.id = x.id`,
    [JSON.stringify(rows)],
  );
}

/**
 * Audience memberships, each once; none in an audience deleted already (a write that checked the audience before
 * its deletion, or an import's batch in flight then, may still name it).
 */
async function insertMembers(tx: Transaction, members: { contact_id: string; audience_id: string }[]) {
  if (members.length > 0)
    await tx.query(
      `INSERT INTO contact_audiences SELECT contact_id, audience_id
       FROM json_to_recordset($1::json) AS x(contact_id text, audience_id text)
       WHERE NOT EXISTS (SELECT 1 FROM contact_deleted_audiences d WHERE d.audience_id = x.audience_id)
       ON CONFLICT DO NOTHING`,
      [JSON.stringify(members)],
    );
}

/**
 * Contacts and their audiences. Personal data is opened as it is applied: a contact whose data was forgotten
 * (deleted since) is left out, as its deletion will remove it anyway. A deleted audience leaves every contact's
 * `audience_ids` (its contacts stay): recorded here, so that a membership written after it is not added either.
 */
export const contactsProjection: Projection<ContactEvent | AudienceEvent> = {
  name: 'contacts',
  tables: ['contacts', 'contact_audiences', 'contact_topics', 'contact_deleted_audiences'],
  types: [
    'ContactCreated',
    'ContactUpdated',
    'ContactAddedToAudience',
    'ContactRemovedFromAudience',
    'ContactTopicSubscriptionChanged',
    'ContactUnsubscribed',
    'ContactDeleted',
    'AudienceDeleted',
  ],
  async applyBatch(tx, events) {
    let run: Stored<ContactEvent | AudienceEvent>[] = [];
    // A run's new contacts, then its changes, then its memberships, a statement or two each: a contact's change or
    // membership comes after its creation in the log, and a change and a membership touch different rows.
    const applyRun = async () => {
      await insertCreated(
        tx,
        run.filter((e): e is Created => e.type === 'ContactCreated'),
      );
      await updateChanged(
        tx,
        run.filter((e): e is Updated => e.type === 'ContactUpdated'),
      );
      await insertMembers(
        tx,
        run.flatMap((e) =>
          e.type === 'ContactAddedToAudience'
            ? [{ contact_id: e.data.contactId, audience_id: e.data.audienceId }]
            : [],
        ),
      );
      run = [];
    };
    for (const e of events) {
      if (e.type === 'ContactCreated' || e.type === 'ContactUpdated' || e.type === 'ContactAddedToAudience') {
        run.push(e);
        continue;
      }
      await applyRun();
      await this.apply(tx, e);
    }
    await applyRun();
  },
  async apply(tx, e) {
    switch (e.type) {
      case 'ContactCreated':
        return insertCreated(tx, [e]);
      case 'ContactUpdated':
        return updateChanged(tx, [e]);
      case 'ContactAddedToAudience':
        return insertMembers(tx, [{ contact_id: e.data.contactId, audience_id: e.data.audienceId }]);
      case 'ContactRemovedFromAudience':
        await tx.query('DELETE FROM contact_audiences WHERE contact_id = $1 AND audience_id = $2', [
          e.data.contactId,
          e.data.audienceId,
        ]);
        return;
      case 'ContactTopicSubscriptionChanged':
        await tx.query(
          `INSERT INTO contact_topics VALUES ($1, $2, $3)
           ON CONFLICT (contact_id, topic_id) DO UPDATE SET subscription = excluded.subscription`,
          [e.data.contactId, e.data.topicId, e.data.subscription],
        );
        return;
      case 'ContactUnsubscribed':
        // From a topic: its ContactTopicSubscriptionChanged says so. From everything: the flag.
        if (!e.data.topicId)
          await updateRow(tx, 'contacts', e.data.contactId, {
            unsubscribed: true,
            updated_at: e.data.unsubscribedAt,
          });
        return;
      case 'ContactDeleted':
        await tx.query('DELETE FROM contact_topics WHERE contact_id = $1', [e.data.contactId]);
        await tx.query('DELETE FROM contact_audiences WHERE contact_id = $1', [e.data.contactId]);
        await tx.query('DELETE FROM contacts WHERE id = $1', [e.data.contactId]);
        return;
      case 'AudienceDeleted':
        // One statement whatever the audience's size (the index on audience_id), and a no-op the second time.
        await tx.query(
          `WITH gone AS (INSERT INTO contact_deleted_audiences VALUES ($1) ON CONFLICT DO NOTHING)
           DELETE FROM contact_audiences WHERE audience_id = $1`,
          [e.data.audienceId],
        );
        return;
    }
  },
};
