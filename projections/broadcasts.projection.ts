import type { Transaction } from '../platform/db/database.ts';
import type { BroadcastContent, BroadcastEvent } from '../write-side/broadcasts/broadcast.events.ts';
import type { ContactEvent } from '../write-side/contacts/contact.events.ts';
import type { Projection } from './projection.ts';

const contentColumns = (c: BroadcastContent) => [
  c.name,
  c.audienceId,
  c.topicId,
  c.from,
  JSON.stringify(c.replyTo),
  c.subject,
  c.html,
  c.text,
  c.templateId,
];

const set = (tx: Transaction, id: string, assignments: string, values: unknown[]) =>
  tx.query(`UPDATE broadcasts SET ${assignments} WHERE id = $1`, [id, ...values]);

/** Broadcasts with their sending's progress, and the unsubscribes their links caused. */
export const broadcastsProjection: Projection<BroadcastEvent | ContactEvent> = {
  name: 'broadcasts',
  tables: ['broadcasts'],
  types: [
    'BroadcastCreated',
    'BroadcastUpdated',
    'BroadcastDeleted',
    'BroadcastScheduled',
    'BroadcastCanceled',
    'BroadcastSendingStarted',
    'BroadcastBatchExpanded',
    'BroadcastSent',
    'ContactUnsubscribed',
  ],
  async apply(tx, e) {
    switch (e.type) {
      case 'BroadcastCreated': {
        const d = e.data;
        await tx.query(
          `INSERT INTO broadcasts (id, org_id, mode, name, audience_id, topic_id, from_address, reply_to, subject, html,
             text_body, template_id, status, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'draft', $13, $13) ON CONFLICT (id) DO NOTHING`,
          [d.broadcastId, d.orgId, d.mode, ...contentColumns(d), d.createdAt],
        );
        return;
      }
      case 'BroadcastUpdated': {
        const d = e.data;
        return void (await set(
          tx,
          d.broadcastId,
          `name = $2, audience_id = $3, topic_id = $4, from_address = $5, reply_to = $6, subject = $7, html = $8,
           text_body = $9, template_id = $10, updated_at = $11`,
          [...contentColumns(d), d.updatedAt],
        ));
      }
      case 'BroadcastDeleted':
        return void (await set(tx, e.data.broadcastId, 'deleted_at = $2', [e.data.deletedAt]));
      case 'BroadcastScheduled':
        return void (await set(
          tx,
          e.data.broadcastId,
          "status = 'scheduled', send_at = $2, updated_at = $3",
          [e.data.sendAt, e.data.scheduledAt],
        ));
      case 'BroadcastCanceled':
        return void (await set(
          tx,
          e.data.broadcastId,
          "status = 'canceled', canceled_at = $2, updated_at = $2",
          [e.data.canceledAt],
        ));
      case 'BroadcastSendingStarted':
        return void (await set(
          tx,
          e.data.broadcastId,
          "status = 'sending', started_at = $2, updated_at = $2",
          [e.data.startedAt],
        ));
      case 'BroadcastBatchExpanded': {
        const { skipped: s, ...d } = e.data;
        const looked = d.queued + s.unsubscribed + s.suppressed + s.notSubscribed + s.quota + s.failed;
        return void (await set(
          tx,
          d.broadcastId,
          `contacts_processed = contacts_processed + $2, recipients = recipients + $3,
           skipped_unsubscribed = skipped_unsubscribed + $4, skipped_suppressed = skipped_suppressed + $5,
           skipped_not_subscribed = skipped_not_subscribed + $6, skipped_quota = skipped_quota + $7,
           skipped_failed = skipped_failed + $8`,
          [looked, d.queued, s.unsubscribed, s.suppressed, s.notSubscribed, s.quota, s.failed],
        ));
      }
      case 'BroadcastSent':
        return void (await set(tx, e.data.broadcastId, "status = 'sent', sent_at = $2, updated_at = $2", [
          e.data.sentAt,
        ]));
      case 'ContactUnsubscribed':
        if (e.data.broadcastId) await set(tx, e.data.broadcastId, 'unsubscribed = unsubscribed + 1', []);
        return;
    }
  },
};
