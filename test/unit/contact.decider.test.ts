import { describe, it } from 'vitest';
import {
  type ContactEmailCommand,
  contactDecider,
  contactEmailDecider,
} from '../../domain/contacts/contact.decider.ts';
import type { ContactEvent } from '../../domain/contacts/contact.events.ts';
import { itHidesFromOtherCallers, spec } from '../support/given-when-then.ts';

const caller = { contactId: 'con_1', orgId: 'org_1', mode: 'live' as const };
const created: ContactEvent = {
  type: 'ContactCreated',
  data: {
    ...caller,
    emailKey: 'k1',
    personal: 'sealed-1',
    unsubscribed: false,
    consentGivenAt: null,
    audienceIds: ['aud_1'],
    createdAt: 'T1',
  },
};
const update = {
  ...caller,
  type: 'UpdateContact' as const,
  emailKey: 'k1',
  personal: 'sealed-2',
  unsubscribed: true,
  consentGivenAt: null,
  at: 'T2',
};
const updated: ContactEvent = {
  type: 'ContactUpdated',
  data: {
    contactId: 'con_1',
    emailKey: 'k1',
    personal: 'sealed-2',
    unsubscribed: true,
    consentGivenAt: null,
    updatedAt: 'T2',
  },
};

const changed = (topicId: string, subscription: 'opt_in' | 'opt_out'): ContactEvent => ({
  type: 'ContactTopicSubscriptionChanged',
  data: { contactId: 'con_1', topicId, subscription, changedAt: 'T2' },
});

describe('contact decider', () => {
  it('creates a contact, once', () => {
    const { type: _, data } = created;
    const { createdAt: __, ...rest } = data as Extract<ContactEvent, { type: 'ContactCreated' }>['data'];
    const create = { ...rest, type: 'CreateContact' as const, at: 'T1' };
    spec(contactDecider).given([]).when(create).then([created]);
    spec(contactDecider).given([created]).when(create).then([]);
  });

  it('updates it, and tells of an unsubscription once', () => {
    spec(contactDecider)
      .given([created])
      .when(update)
      .then([updated, { type: 'ContactUnsubscribed', data: { contactId: 'con_1', unsubscribedAt: 'T2' } }]);
    spec(contactDecider)
      .given([created, updated])
      .when({ ...update, at: 'T3' })
      .then([{ ...updated, data: { ...updated.data, updatedAt: 'T3' } } as ContactEvent]);
  });

  it('joins and leaves audiences, each once', () => {
    spec(contactDecider)
      .given([created])
      .when({ ...caller, type: 'AddContactToAudience', audienceId: 'aud_1', at: 'T2' })
      .then([]);
    spec(contactDecider)
      .given([created])
      .when({ ...caller, type: 'AddContactToAudience', audienceId: 'aud_2', at: 'T2' })
      .then([
        { type: 'ContactAddedToAudience', data: { contactId: 'con_1', audienceId: 'aud_2', addedAt: 'T2' } },
      ]);
    spec(contactDecider)
      .given([created])
      .when({ ...caller, type: 'RemoveContactFromAudience', audienceId: 'aud_1', at: 'T2' })
      .then([
        {
          type: 'ContactRemovedFromAudience',
          data: { contactId: 'con_1', audienceId: 'aud_1', removedAt: 'T2' },
        },
      ]);
    spec(contactDecider)
      .given([created])
      .when({ ...caller, type: 'RemoveContactFromAudience', audienceId: 'aud_9', at: 'T2' })
      .then([]);
  });

  it('records topic choices, with an unsubscription only when leaving a topic the contact was getting', () => {
    const set = (topicId: string, subscription: 'opt_in' | 'opt_out') => ({
      ...caller,
      type: 'SetContactTopics' as const,
      subscriptions: [{ topicId, subscription }],
      defaults: { top_in: 'opt_in' as const, top_out: 'opt_out' as const },
      broadcastId: null,
      emailId: null,
      at: 'T2',
    });
    spec(contactDecider)
      .given([created])
      .when(set('top_in', 'opt_out'))
      .then([
        changed('top_in', 'opt_out'),
        {
          type: 'ContactUnsubscribed',
          data: { contactId: 'con_1', topicId: 'top_in', unsubscribedAt: 'T2' },
        },
      ]);
    spec(contactDecider)
      .given([created])
      .when(set('top_out', 'opt_out'))
      .then([changed('top_out', 'opt_out')]);
    spec(contactDecider)
      .given([created, changed('top_out', 'opt_out')])
      .when(set('top_out', 'opt_out'))
      .then([]);
    // A topic named twice in one request: each choice on the one before it, one unsubscription.
    spec(contactDecider)
      .given([created])
      .when({
        ...set('top_in', 'opt_out'),
        subscriptions: [
          { topicId: 'top_in', subscription: 'opt_out' },
          { topicId: 'top_in', subscription: 'opt_out' },
        ],
      })
      .then([
        changed('top_in', 'opt_out'),
        {
          type: 'ContactUnsubscribed',
          data: { contactId: 'con_1', topicId: 'top_in', unsubscribedAt: 'T2' },
        },
      ]);
  });

  it('names the email and its broadcast in each unsubscription of choices made on its unsubscribe page', () => {
    const onPage = {
      ...caller,
      type: 'SetContactTopics' as const,
      subscriptions: [
        { topicId: 'top_in', subscription: 'opt_out' as const },
        { topicId: 'top_out', subscription: 'opt_in' as const },
        { topicId: 'top_other', subscription: 'opt_out' as const },
      ],
      defaults: { top_in: 'opt_in' as const, top_out: 'opt_out' as const, top_other: 'opt_in' as const },
      broadcastId: 'bc_1',
      emailId: 'em_1',
      at: 'T2',
    };
    spec(contactDecider)
      .given([created])
      .when(onPage)
      .then([
        changed('top_in', 'opt_out'),
        {
          type: 'ContactUnsubscribed',
          data: {
            contactId: 'con_1',
            topicId: 'top_in',
            broadcastId: 'bc_1',
            emailId: 'em_1',
            unsubscribedAt: 'T2',
          },
        },
        changed('top_out', 'opt_in'),
        changed('top_other', 'opt_out'),
        {
          type: 'ContactUnsubscribed',
          data: {
            contactId: 'con_1',
            topicId: 'top_other',
            broadcastId: 'bc_1',
            emailId: 'em_1',
            unsubscribedAt: 'T2',
          },
        },
      ]);
    // Nothing left to leave: nothing is recorded, whatever page it came from.
    spec(contactDecider)
      .given([created, changed('top_in', 'opt_out')])
      .when({ ...onPage, subscriptions: [{ topicId: 'top_in', subscription: 'opt_out' }] })
      .then([]);
  });

  it('unsubscribes by a broadcast’s link: from its topic if it had one, else from everything, once', () => {
    const unsubscribe = (topicId: string | null, topicDefault: 'opt_in' | 'opt_out' | null) => ({
      ...caller,
      type: 'UnsubscribeContact' as const,
      topicId,
      topicDefault,
      broadcastId: 'bc_1',
      emailId: 'em_1',
      at: 'T2',
    });
    const by = { broadcastId: 'bc_1', emailId: 'em_1' };
    const everything: ContactEvent = {
      type: 'ContactUnsubscribed',
      data: { contactId: 'con_1', ...by, unsubscribedAt: 'T2' },
    };
    spec(contactDecider).given([created]).when(unsubscribe(null, null)).then([everything]);
    spec(contactDecider).given([created, everything]).when(unsubscribe(null, null)).then([]);
    spec(contactDecider)
      .given([created])
      .when(unsubscribe('top_in', 'opt_in'))
      .then([
        changed('top_in', 'opt_out'),
        {
          type: 'ContactUnsubscribed',
          data: { contactId: 'con_1', topicId: 'top_in', ...by, unsubscribedAt: 'T2' },
        },
      ]);
    // Not subscribed to it (its default, or its own choice): nothing to do.
    spec(contactDecider).given([created]).when(unsubscribe('top_out', 'opt_out')).then([]);
    spec(contactDecider)
      .given([created, changed('top_in', 'opt_out')])
      .when(unsubscribe('top_in', 'opt_in'))
      .then([]);
  });

  it('unsubscribes by the link of a send about a topic: the email is named, no broadcast', () => {
    spec(contactDecider)
      .given([created])
      .when({
        ...caller,
        type: 'UnsubscribeContact',
        topicId: 'top_in',
        topicDefault: 'opt_in',
        broadcastId: null,
        emailId: 'em_2',
        at: 'T2',
      })
      .then([
        changed('top_in', 'opt_out'),
        {
          type: 'ContactUnsubscribed',
          data: { contactId: 'con_1', topicId: 'top_in', emailId: 'em_2', unsubscribedAt: 'T2' },
        },
      ]);
  });

  it('deletes it; a deleted contact is not found', () => {
    const deleted: ContactEvent = { type: 'ContactDeleted', data: { contactId: 'con_1', deletedAt: 'T3' } };
    spec(contactDecider)
      .given([created])
      .when({ ...caller, type: 'DeleteContact', at: 'T3' })
      .then([deleted]);
    spec(contactDecider).given([created, deleted]).when(update).thenFails('not_found');
  });
  itHidesFromOtherCallers(contactDecider, [created], update);
});

describe('contact email decider', () => {
  /** UNWRITTEN_CLAIM_GRACE_MS: a few minutes. */
  const GRACE_MS = 5 * 60_000;
  const T1 = '2026-01-01T10:00:00.000Z';
  const T2 = '2026-01-01T10:01:00.000Z';
  /** The grace after T1, less a millisecond and exactly. */
  const justBefore = new Date(Date.parse(T1) + GRACE_MS - 1).toISOString();
  const graceOver = new Date(Date.parse(T1) + GRACE_MS).toISOString();
  const claimed = { type: 'ContactEmailClaimed' as const, data: { contactId: 'con_1', claimedAt: T1 } };
  const claimedBy = (contactId: string, claimedAt: string) => ({
    type: 'ContactEmailClaimed' as const,
    data: { contactId, claimedAt },
  });
  const claim = (
    contactId: string,
    holderSeen: Extract<ContactEmailCommand, { type: 'ClaimContactEmail' }>['holderSeen'] = null,
    at = T2,
  ) => ({ type: 'ClaimContactEmail' as const, contactId, holderSeen, at });

  it('gives an address to one contact; a second is refused with contact_exists', () => {
    spec(contactEmailDecider)
      .given([])
      .when(claim('con_1'))
      .then([claimedBy('con_1', T2)]);
    spec(contactEmailDecider).given([claimed]).when(claim('con_1')).then([]);
    spec(contactEmailDecider).given([claimed]).when(claim('con_2')).thenFails('contact_exists');
  });

  it('frees it on release, and from a holder deleted since', () => {
    const released = {
      type: 'ContactEmailReleased' as const,
      data: { contactId: 'con_1', releasedAt: T2 },
    };
    spec(contactEmailDecider)
      .given([claimed])
      .when({ type: 'ReleaseContactEmail', contactId: 'con_1', at: T2 })
      .then([released]);
    spec(contactEmailDecider)
      .given([claimed, released])
      .when(claim('con_2'))
      .then([claimedBy('con_2', T2)]);
    spec(contactEmailDecider)
      .given([claimed])
      .when(claim('con_2', { contactId: 'con_1', as: 'deleted' }))
      .then([claimedBy('con_2', T2)]);
  });

  it('keeps it for a holder not written yet (being created) until the grace after its claim is over', () => {
    const unwritten = { contactId: 'con_1', as: 'unwritten' as const };
    spec(contactEmailDecider).given([claimed]).when(claim('con_2', unwritten)).thenFails('contact_exists');
    spec(contactEmailDecider)
      .given([claimed])
      .when(claim('con_2', unwritten, justBefore))
      .thenFails('contact_exists');
    // Still unwritten once the grace is over: a crash between the claim and the contact; the address is free.
    spec(contactEmailDecider)
      .given([claimed])
      .when(claim('con_2', unwritten, graceOver))
      .then([claimedBy('con_2', graceOver)]);
    // The grace runs from the holder's own claim, not an earlier one of the address.
    spec(contactEmailDecider)
      .given([
        claimedBy('con_0', T1),
        { type: 'ContactEmailReleased', data: { contactId: 'con_0', releasedAt: T2 } },
        claimedBy('con_1', T2),
      ])
      .when(claim('con_3', unwritten, graceOver))
      .thenFails('contact_exists');
    // What was seen of another contact than the holder frees nothing.
    spec(contactEmailDecider)
      .given([claimed])
      .when(claim('con_2', { contactId: 'con_9', as: 'deleted' }, graceOver))
      .thenFails('contact_exists');
  });
});
