import { describe, expect, it } from 'vitest';
import { topicReaches } from '../../domain/topics/topic-reach.ts';

describe('topicReaches: whether an email about a topic goes to an address', () => {
  it.each([
    ['opt_in', null, true, 'no contact: the default'],
    ['opt_out', null, false, 'no contact: the default'],
    ['opt_in', { unsubscribed: false, subscription: null }, true, 'a contact without a choice: the default'],
    [
      'opt_out',
      { unsubscribed: false, subscription: null },
      false,
      'a contact without a choice: the default',
    ],
    ['opt_in', { unsubscribed: false, subscription: 'opt_out' }, false, 'its own choice over the default'],
    ['opt_out', { unsubscribed: false, subscription: 'opt_in' }, true, 'its own choice over the default'],
    ['opt_in', { unsubscribed: true, subscription: null }, false, 'unsubscribed from everything'],
    ['opt_out', { unsubscribed: true, subscription: 'opt_in' }, false, 'unsubscribed from everything'],
  ] as const)('default %s, reader %j: %s (%s)', (topicDefault, reader, reaches, _why) => {
    expect(topicReaches(topicDefault, reader)).toBe(reaches);
  });
});
