import { describe, expect, it } from 'vitest';
import { DELIVERY_ID } from '../../domain/webhooks/webhook.events.ts';
import { deliveryId } from '../../processes/webhooks/delivery-ids.ts';

describe('delivery ids', () => {
  const at = new Date('2026-11-22T10:00:00.123Z');

  it('are the same for the same webhook and source event, whenever they are derived', () => {
    const id = deliveryId('wh_a', 'email-em_1@1', at);
    expect(id).toMatch(DELIVERY_ID);
    expect(deliveryId('wh_a', 'email-em_1@1', new Date(at))).toBe(id);
  });

  it('differ between webhooks and between events of the same millisecond', () => {
    const ids = new Set([
      deliveryId('wh_a', 'email-em_1@1', at),
      deliveryId('wh_b', 'email-em_1@1', at),
      deliveryId('wh_a', 'email-em_1@2', at),
      deliveryId('wh_a', 'email-em_2@1', at),
    ]);
    expect(ids.size).toBe(4);
  });

  it('sort by the time of their event', () => {
    const later = new Date(at.getTime() + 1);
    expect(deliveryId('wh_a', 'email-em_9@1', at) < deliveryId('wh_a', 'email-em_1@1', later)).toBe(true);
  });
});
