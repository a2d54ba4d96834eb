import type { WebhookEvent } from '../domain/webhooks/webhook.events.ts';
import type { Projection } from './projection.ts';
import { insertRow, updateRow } from './rows.ts';

/** Webhook endpoints as the API shows them. Secrets stay in the event log (sealed); they are never read from here. */
export const webhooksProjection: Projection<WebhookEvent> = {
  name: 'webhooks',
  tables: ['webhooks'],
  types: ['WebhookCreated', 'WebhookUpdated', 'WebhookSecretRotated', 'WebhookDisabled', 'WebhookDeleted'],
  async apply(tx, e) {
    switch (e.type) {
      case 'WebhookCreated': {
        const d = e.data;
        return insertRow(tx, 'webhooks', {
          id: d.webhookId,
          org_id: d.orgId,
          mode: d.mode,
          url: d.url,
          events: JSON.stringify(d.events),
          active: d.active,
          created_at: d.createdAt,
          updated_at: d.createdAt,
        });
      }
      case 'WebhookUpdated': {
        const d = e.data;
        return updateRow(tx, 'webhooks', d.webhookId, {
          url: d.url,
          events: JSON.stringify(d.events),
          active: d.active,
          updated_at: d.updatedAt,
          // Turning an endpoint back on clears why it was turned off.
          ...(d.active && { disabled_reason: null, disabled_detail: null, disabled_at: null }),
        });
      }
      case 'WebhookSecretRotated':
        return updateRow(tx, 'webhooks', e.data.webhookId, {
          secret_rotated_at: e.data.rotatedAt,
          updated_at: e.data.rotatedAt,
        });
      case 'WebhookDisabled': {
        const d = e.data;
        return updateRow(tx, 'webhooks', d.webhookId, {
          active: false,
          disabled_reason: d.reason,
          disabled_detail: d.detail,
          disabled_at: d.disabledAt,
          updated_at: d.disabledAt,
        });
      }
      case 'WebhookDeleted':
        return updateRow(tx, 'webhooks', e.data.webhookId, { deleted_at: e.data.deletedAt, active: false });
    }
  },
};
