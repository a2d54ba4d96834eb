/**
 * The public event types a webhook can subscribe to: the spec's table, plus the patterns `email.*` and `*`.
 * This list is the API contract; which internal events feed each type lives in processes/webhooks/.
 */
export const PUBLIC_EVENT_TYPES = [
  'email.sent',
  'email.delivered',
  'email.delivery_delayed',
  'email.bounced',
  'email.complained',
  'email.opened',
  'email.clicked',
  'email.canceled',
  'email.received',
  'contact.created',
  'contact.updated',
  'contact.deleted',
  'contact.unsubscribed',
  'domain.verified',
  'domain.dns_changed',
] as const;

export type PublicEventType = (typeof PUBLIC_EVENT_TYPES)[number];

export const SUBSCRIPTION_PATTERNS = ['email.*', '*'] as const;

/** Sent once to a new (active) endpoint so its owner sees signatures verify before real traffic arrives. */
export const TEST_EVENT_TYPE = 'webhook.test';

export const isSubscribable = (type: string): boolean =>
  (PUBLIC_EVENT_TYPES as readonly string[]).includes(type) ||
  (SUBSCRIPTION_PATTERNS as readonly string[]).includes(type);

/** Does a subscription list (exact types, `email.*`, `*`) cover this public event type? */
export function subscriptionMatches(subscribed: readonly string[], type: string): boolean {
  for (const s of subscribed) {
    if (s === '*' || s === type) return true;
    if (s === 'email.*' && type.startsWith('email.')) return true;
  }
  return false;
}
