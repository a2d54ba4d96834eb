import type { BroadcastContent, BroadcastEvent } from '../domain/broadcasts/broadcast.events.ts';
import type { ContactEvent } from '../domain/contacts/contact.events.ts';
import type { Transaction } from '../platform/db/database.ts';
import type { Projection } from './projection.ts';
import { insertRow, updateRow } from './rows.ts';

const contentRow = (c: BroadcastContent) => ({
  name: c.name,
  audience_id: c.audienceId,
  topic_id: c.topicId,
  from_address: c.from,
  reply_to: JSON.stringify(c.replyTo),
  subject: c.subject,
  html: c.html,
  text_body: c.text,
  template_id: c.templateId,
  preview_text: c.previewText ?? null,
});

/** A broadcast in a new status since `at`, which its own column keeps too. */
const moveTo = (tx: Transaction, id: string, status: string, since: string, at: string) =>
  updateRow(tx, 'broadcasts', id, { status, [since]: at, updated_at: at });

/**
 * Broadcasts with their sending's progress, and the contacts their links unsubscribed: each contact once per
 * broadcast, however often it used the link. `broadcast_unsubscribes` holds who did, so an event applied again
 * (a rebuild) counts no one twice.
 */
export const broadcastsProjection: Projection<BroadcastEvent | ContactEvent> = {
  name: 'broadcasts',
  tables: ['broadcasts', 'broadcast_unsubscribes'],
  types: [
    'BroadcastCreated',
    'BroadcastUpdated',
    'BroadcastDeleted',
    'BroadcastScheduled',
    'BroadcastUnscheduled',
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
        return insertRow(tx, 'broadcasts', {
          id: d.broadcastId,
          org_id: d.orgId,
          mode: d.mode,
          ...contentRow(d),
          status: 'draft',
          created_at: d.createdAt,
          updated_at: d.createdAt,
        });
      }
      case 'BroadcastUpdated':
        return updateRow(tx, 'broadcasts', e.data.broadcastId, {
          ...contentRow(e.data),
          updated_at: e.data.updatedAt,
        });
      case 'BroadcastDeleted':
        return updateRow(tx, 'broadcasts', e.data.broadcastId, { deleted_at: e.data.deletedAt });
      case 'BroadcastScheduled': {
        const d = e.data;
        return updateRow(tx, 'broadcasts', d.broadcastId, {
          status: 'scheduled',
          send_at: d.sendAt,
          updated_at: d.scheduledAt,
        });
      }
      case 'BroadcastUnscheduled':
        return updateRow(tx, 'broadcasts', e.data.broadcastId, {
          status: 'draft',
          send_at: null,
          updated_at: e.data.unscheduledAt,
        });
      case 'BroadcastCanceled':
        return moveTo(tx, e.data.broadcastId, 'canceled', 'canceled_at', e.data.canceledAt);
      case 'BroadcastSendingStarted':
        return moveTo(tx, e.data.broadcastId, 'sending', 'started_at', e.data.startedAt);
      case 'BroadcastBatchExpanded': {
        const { skipped: s, ...d } = e.data;
        const looked = d.queued + s.unsubscribed + s.suppressed + s.notSubscribed + s.quota + s.failed;
        await tx.query(
          `UPDATE broadcasts SET contacts_processed = contacts_processed + $2, recipients = recipients + $3,
             skipped_unsubscribed = skipped_unsubscribed + $4, skipped_suppressed = skipped_suppressed + $5,
             skipped_not_subscribed = skipped_not_subscribed + $6, skipped_quota = skipped_quota + $7,
             skipped_failed = skipped_failed + $8
           WHERE id = $1`,
          [d.broadcastId, looked, d.queued, s.unsubscribed, s.suppressed, s.notSubscribed, s.quota, s.failed],
        );
        return;
      }
      case 'BroadcastSent':
        return moveTo(tx, e.data.broadcastId, 'sent', 'sent_at', e.data.sentAt);
      case 'ContactUnsubscribed':
        if (e.data.broadcastId)
          await tx.query(
            `WITH first AS (
               INSERT INTO broadcast_unsubscribes (broadcast_id, contact_id) VALUES ($1, $2)
               ON CONFLICT DO NOTHING RETURNING broadcast_id)
             UPDATE broadcasts SET unsubscribed = unsubscribed + 1 WHERE id IN (SELECT broadcast_id FROM first)`,
            [e.data.broadcastId, e.data.contactId],
          );
        return;
    }
  },
};
