import type { DefaultSubscription } from './topic.events.ts';

/** What decides whether an email about a topic reaches an address: the contact it belongs to, if any. */
export interface TopicReader {
  /** Unsubscribed from everything. */
  unsubscribed: boolean;
  /** The contact's own choice for the topic; null when it made none. */
  subscription: DefaultSubscription | null;
}

/**
 * Whether an email about a topic (a broadcast's, or a send's `topic_id`) goes to an address: the contact's own
 * choice for the topic, else the topic's default, which also holds for an address that is no contact. A contact
 * unsubscribed from everything gets none.
 */
export const topicReaches = (topicDefault: DefaultSubscription, reader: TopicReader | null): boolean =>
  !reader?.unsubscribed && (reader?.subscription ?? topicDefault) === 'opt_in';
