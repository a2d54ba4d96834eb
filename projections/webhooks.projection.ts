import type { WebhookEvent } from '../write-side/webhooks/webhook.events.ts';
import type { Projection } from './projection.ts';

/** Webhook endpoints as the API shows them. Secrets stay in the event log (sealed); they are never read from here. */
export const webhooksProjection: Projection<WebhookEvent> = {
  name: 'webhooks',
  tables: ['webhooks'],
  types: ['WebhookCreated', 'WebhookUpdated', 'WebhookSecretRotated', 'WebhookDisabled', 'WebhookDeleted'],
  async apply(tx, e) {
    switch (e.type) {
      case 'WebhookCreated': {
        const d = e.data;
        await tx.query(
          `INSERT INTO webhooks (id, org_id, mode, url, events, active, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (id) DO NOTHING`,
          [d.webhookId, d.orgId, d.mode, d.url, JSON.stringify(d.events), d.active, d.createdAt],
        );
        return;
      }
      case 'WebhookUpdated': {
        const d = e.data;
        // Turning an endpoint back on clears why it was turned off.
        await tx.query(
          `UPDATE webhooks SET url = $2, events = $3, active = $4, updated_at = $5,
             disabled_reason = CASE WHEN $4 THEN NULL ELSE disabled_reason END,
             disabled_detail = CASE WHEN $4 THEN NULL ELSE disabled_detail END,
             disabled_at = CASE WHEN $4 THEN NULL ELSE disabled_at END
           WHERE id = $1`,
          [d.webhookId, d.url, JSON.stringify(d.events), d.active, d.updatedAt],
        );
        return;
      }
      case 'WebhookSecretRotated':
        await tx.query('UPDATE webhooks SET secret_rotated_at = $2, updated_at = $2 WHERE id = $1', [
          e.data.webhookId,
          e.data.rotatedAt,
        ]);
        return;
      case 'WebhookDisabled': {
        const d = e.data;
        await tx.query(
          `UPDATE webhooks SET active = false, disabled_reason = $2, disabled_detail = $3, disabled_at = $4, updated_at = $4
           WHERE id = $1`,
          [d.webhookId, d.reason, d.detail, d.disabledAt],
        );
        return;
      }
      case 'WebhookDeleted':
        await tx.query('UPDATE webhooks SET deleted_at = $2, active = false WHERE id = $1', [
          e.data.webhookId,
          e.data.deletedAt,
        ]);
        return;
    }
  },
};
