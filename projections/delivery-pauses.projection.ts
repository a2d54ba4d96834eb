import { type QueueEvent, scopeOf } from '../domain/queue/queue.events.ts';
import type { Projection } from './projection.ts';

/**
 * `delivery_pauses` (read-side/queue/queue.schema.ts): the pause in force per (scope, destination), which the
 * queue view shows and the delivery claim obeys. A replay of the log reproduces it: a pause is an upsert, a
 * resumption a delete, in log order.
 */
export const deliveryPausesProjection: Projection<QueueEvent> = {
  name: 'delivery_pauses',
  tables: ['delivery_pauses'],
  types: ['DeliveryPaused', 'DeliveryResumed'],
  async apply(tx, e) {
    switch (e.type) {
      case 'DeliveryPaused':
        await tx.query(
          `INSERT INTO delivery_pauses (org_id, destination, until, reason, paused_by)
           VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (org_id, destination)
           DO UPDATE SET until = EXCLUDED.until, reason = EXCLUDED.reason, paused_by = EXCLUDED.paused_by`,
          [scopeOf(e.data.orgId), e.data.destination, e.data.until, e.data.reason, e.metadata.actor],
        );
        return;
      case 'DeliveryResumed':
        await tx.query('DELETE FROM delivery_pauses WHERE org_id = $1 AND destination = $2', [
          scopeOf(e.data.orgId),
          e.data.destination,
        ]);
        return;
    }
  },
};
