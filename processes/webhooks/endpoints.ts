import { subscriptionMatches } from '../../domain/webhooks/event-types.ts';
import { WEBHOOK_EVENT_TYPES, type WebhookEvent } from '../../domain/webhooks/webhook.events.ts';
import type { Queryable, Transaction } from '../../platform/db/database.ts';
import { isOneOf, type StoredEvent } from '../../platform/eventstore/types.ts';
import type { PreviousSecret } from '../../read-side/webhooks/delivery-log.schema.ts';
import { ENDPOINT_CHANGED, resetDeliveries, wakeDispatchersAtCommit } from './deliveries.ts';

/** An endpoint's subscription as the fan-out sees it at its checkpoint: state as of the event being fanned out. */
export interface Endpoint {
  webhookId: string;
  orgId: string;
  mode: string;
  events: string[];
  active: boolean;
  deleted: boolean;
}

/** Webhook events after which deliveries claimed ahead for the endpoint may no longer be sent as they are. */
const CHANGES_ADDRESS_OR_STATE = new Set<WebhookEvent['type']>([
  'WebhookUpdated',
  'WebhookSecretRotated',
  'WebhookDisabled',
  'WebhookDeleted',
]);

/** The endpoints of the organizations in a batch, kept in step with the webhook events applied in it. */
export class EndpointSet {
  readonly #byId = new Map<string, Endpoint>();
  /** Dispatchers are told of this batch's endpoint changes at its commit (once per batch). */
  #dispatchersTold = false;

  static async load(q: Queryable, orgIds: string[]): Promise<EndpointSet> {
    const set = new EndpointSet();
    if (orgIds.length === 0) return set;
    const { rows } = await q.query(
      'SELECT webhook_id, org_id, mode, events, active, deleted FROM webhook_endpoints WHERE org_id = ANY($1)',
      [orgIds],
    );
    for (const r of rows) {
      set.#byId.set(r.webhook_id, {
        webhookId: r.webhook_id,
        orgId: r.org_id,
        mode: r.mode,
        events: r.events,
        active: r.active,
        deleted: r.deleted,
      });
    }
    return set;
  }

  /** Organizations with an active endpoint: only their events can lead to deliveries. */
  activeOrganizations(): string[] {
    return [...this.#byId.values()].filter((e) => e.active && !e.deleted).map((e) => e.orgId);
  }

  get(webhookId: string) {
    return this.#byId.get(webhookId);
  }

  /** Active endpoints of the event's organization and mode subscribed to `type`. */
  matching(orgId: string, mode: string, type: string): Endpoint[] {
    const out: Endpoint[] = [];
    for (const e of this.#byId.values()) {
      if (
        e.orgId === orgId &&
        e.mode === mode &&
        e.active &&
        !e.deleted &&
        subscriptionMatches(e.events, type)
      )
        out.push(e);
    }
    return out;
  }

  /**
   * Applies a webhook event to the endpoint table and to this set (a replay request is the fan-out's). A change
   * of address, secret or state wakes the dispatchers at commit: the deliveries they claimed ahead for the endpoint
   * must not go out to a deleted or disabled one, nor to its old url.
   */
  async apply(tx: Transaction, e: StoredEvent): Promise<void> {
    if (!isOneOf<WebhookEvent>(e, WEBHOOK_EVENT_TYPES)) return;
    if (!this.#dispatchersTold && CHANGES_ADDRESS_OR_STATE.has(e.type)) {
      this.#dispatchersTold = true;
      wakeDispatchersAtCommit(tx, ENDPOINT_CHANGED);
    }
    switch (e.type) {
      case 'WebhookCreated': {
        const d = e.data;
        await tx.query(
          `INSERT INTO webhook_endpoints (webhook_id, org_id, mode, url, events, active, sealed_secret)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (webhook_id) DO NOTHING`,
          [d.webhookId, d.orgId, d.mode, d.url, d.events, d.active, d.sealedSecret],
        );
        this.#byId.set(d.webhookId, {
          webhookId: d.webhookId,
          orgId: d.orgId,
          mode: d.mode,
          events: d.events,
          active: d.active,
          deleted: false,
        });
        return;
      }
      case 'WebhookUpdated': {
        const d = e.data;
        // Switched back on: the failure streak that may have switched it off starts again from zero.
        await tx.query(
          `UPDATE webhook_endpoints SET url = $2, events = $3, active = $4,
             consecutive_failures = CASE WHEN $4 AND NOT active THEN 0 ELSE consecutive_failures END,
             exhausted_streak = CASE WHEN $4 AND NOT active THEN 0 ELSE exhausted_streak END
           WHERE webhook_id = $1`,
          [d.webhookId, d.url, d.events, d.active],
        );
        const known = this.#byId.get(d.webhookId);
        if (known) Object.assign(known, { events: d.events, active: d.active });
        return;
      }
      case 'WebhookSecretRotated': {
        const d = e.data;
        const previous = [
          { sealedSecret: d.previousSealedSecret, validUntil: d.previousValidUntil },
          ...(d.olderSecrets ?? []),
        ].map((r): PreviousSecret => ({ sealed_secret: r.sealedSecret, valid_until: r.validUntil }));
        await tx.query(
          'UPDATE webhook_endpoints SET sealed_secret = $2, previous_secrets = $3 WHERE webhook_id = $1',
          [d.webhookId, d.sealedSecret, JSON.stringify(previous)],
        );
        return;
      }
      case 'WebhookDisabled':
      case 'WebhookDeleted': {
        const deleted = e.type === 'WebhookDeleted';
        await tx.query(
          'UPDATE webhook_endpoints SET active = false, deleted = deleted OR $2 WHERE webhook_id = $1',
          [e.data.webhookId, deleted],
        );
        const known = this.#byId.get(e.data.webhookId);
        if (known) Object.assign(known, { active: false, deleted: known.deleted || deleted });
        return;
      }
      case 'WebhookDeliveryRetryRequested': {
        const d = e.data;
        await resetDeliveries(tx, d.webhookId, [d.deliveryId], d.requestedAt, false);
        return;
      }
    }
  }
}
