import { AppError, visibleTo } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { DataOf } from '../../platform/eventstore/types.ts';
import type { CommandCaller } from '../../platform/tenancy.ts';
import type { ContactEmailEvent, ContactEvent } from './contact.events.ts';

type Caller = CommandCaller<'contactId'>;

type Created = DataOf<ContactEvent, 'ContactCreated'>;
type Updated = DataOf<ContactEvent, 'ContactUpdated'>;

export type ContactCommand =
  | (Caller & { type: 'CreateContact' } & Omit<Created, 'contactId' | 'orgId' | 'mode' | 'createdAt'>)
  | (Caller & { type: 'UpdateContact' } & Omit<Updated, 'contactId' | 'updatedAt'>)
  | (Caller & { type: 'AddContactToAudience'; audienceId: string })
  | (Caller & { type: 'RemoveContactFromAudience'; audienceId: string })
  | (Caller & { type: 'DeleteContact' })
  | (Caller & {
      type: 'SetContactTopics';
      subscriptions: { topicId: string; subscription: 'opt_in' | 'opt_out' }[];
      /** Each topic's default (topics the contact has no choice for follow it). */
      defaults: Record<string, 'opt_in' | 'opt_out'>;
      /** The email (and its broadcast) whose unsubscribe page the choices were made on; null for any other way. */
      broadcastId: string | null;
      emailId: string | null;
    })
  /**
   * An unsubscribe link (RFC 8058): from the topic `topicId` (whose default is `topicDefault`), or from
   * everything when it is null. `emailId`: the email that carried the link; `broadcastId` its broadcast.
   */
  | (Caller & {
      type: 'UnsubscribeContact';
      topicId: string | null;
      topicDefault: 'opt_in' | 'opt_out' | null;
      broadcastId: string | null;
      emailId: string | null;
    });

export type ContactState =
  | { exists: false }
  | ({ exists: true } & Omit<Created, 'contactId' | 'createdAt'> & {
        /** The contact's own choices, by topic. */
        topics: Record<string, 'opt_in' | 'opt_out'>;
        deleted: boolean;
      });

const owned = (state: ContactState, c: Caller) => visibleTo(state, c, 'Contact', c.contactId);

/** Topic choices and unsubscribes: a change of choice, and `ContactUnsubscribed` when it leaves a topic. */
function subscriptionEvents(
  command: Extract<ContactCommand, { type: 'SetContactTopics' | 'UnsubscribeContact' }>,
  state: ContactState,
): ContactEvent[] {
  const { contactId, at } = command;
  // An unsubscribe by an email's link (one-click, its page's form, its mailto) names the email and its broadcast:
  // it is counted for both.
  const from = {
    ...(command.broadcastId && { broadcastId: command.broadcastId }),
    ...(command.emailId && { emailId: command.emailId }),
  };
  switch (command.type) {
    case 'SetContactTopics': {
      // The choices so far, each on the one before it (a topic named twice is one change).
      const topics = { ...owned(state, command).topics };
      const events: ContactEvent[] = [];
      for (const { topicId, subscription } of command.subscriptions) {
        const now = topics[topicId] ?? command.defaults[topicId];
        if (topics[topicId] === subscription) continue;
        topics[topicId] = subscription;
        events.push({
          type: 'ContactTopicSubscriptionChanged',
          data: { contactId, topicId, subscription, changedAt: at },
        });
        if (subscription === 'opt_out' && now === 'opt_in')
          events.push({
            type: 'ContactUnsubscribed',
            data: { contactId, topicId, ...from, unsubscribedAt: at },
          });
      }
      return events;
    }
    case 'UnsubscribeContact': {
      const contact = owned(state, command);
      const { topicId } = command;
      if (!topicId) {
        if (contact.unsubscribed) return [];
        return [{ type: 'ContactUnsubscribed', data: { contactId, ...from, unsubscribedAt: at } }];
      }
      if ((contact.topics[topicId] ?? command.topicDefault) === 'opt_out') return [];
      return [
        {
          type: 'ContactTopicSubscriptionChanged',
          data: { contactId, topicId, subscription: 'opt_out', changedAt: at },
        },
        { type: 'ContactUnsubscribed', data: { contactId, topicId, ...from, unsubscribedAt: at } },
      ];
    }
  }
}

export const contactDecider: Decider<ContactCommand, ContactEvent, ContactState> = {
  initialState: { exists: false },
  evolve(state, event) {
    if (event.type === 'ContactCreated') {
      const { orgId, mode, emailKey, personal, unsubscribed, consentGivenAt, audienceIds } = event.data;
      return {
        exists: true,
        orgId,
        mode,
        emailKey,
        personal,
        unsubscribed,
        consentGivenAt,
        audienceIds,
        topics: {},
        deleted: false,
      };
    }
    if (!state.exists) return state;
    switch (event.type) {
      case 'ContactUpdated': {
        const { emailKey, personal, unsubscribed, consentGivenAt } = event.data;
        return { ...state, emailKey, personal, unsubscribed, consentGivenAt };
      }
      case 'ContactUnsubscribed':
        return event.data.topicId ? state : { ...state, unsubscribed: true };
      case 'ContactAddedToAudience':
        return { ...state, audienceIds: [...state.audienceIds, event.data.audienceId] };
      case 'ContactRemovedFromAudience':
        return { ...state, audienceIds: state.audienceIds.filter((a) => a !== event.data.audienceId) };
      case 'ContactTopicSubscriptionChanged':
        return { ...state, topics: { ...state.topics, [event.data.topicId]: event.data.subscription } };
      case 'ContactDeleted':
        return { ...state, deleted: true };
    }
  },
  decide(command, state) {
    const { contactId, at } = command;
    switch (command.type) {
      case 'CreateContact': {
        if (state.exists) return [];
        const { type: _, at: __, ...data } = command;
        return [{ type: 'ContactCreated', data: { ...data, createdAt: at } }];
      }
      case 'UpdateContact': {
        const contact = owned(state, command);
        const { emailKey, personal, unsubscribed, consentGivenAt } = command;
        const events: ContactEvent[] = [
          {
            type: 'ContactUpdated',
            data: { contactId, emailKey, personal, unsubscribed, consentGivenAt, updatedAt: at },
          },
        ];
        if (unsubscribed && !contact.unsubscribed)
          events.push({ type: 'ContactUnsubscribed', data: { contactId, unsubscribedAt: at } });
        return events;
      }
      case 'AddContactToAudience':
        if (owned(state, command).audienceIds.includes(command.audienceId)) return [];
        return [
          {
            type: 'ContactAddedToAudience',
            data: { contactId, audienceId: command.audienceId, addedAt: at },
          },
        ];
      case 'RemoveContactFromAudience':
        if (!owned(state, command).audienceIds.includes(command.audienceId)) return [];
        return [
          {
            type: 'ContactRemovedFromAudience',
            data: { contactId, audienceId: command.audienceId, removedAt: at },
          },
        ];
      case 'DeleteContact':
        owned(state, command);
        return [{ type: 'ContactDeleted', data: { contactId, deletedAt: at } }];
      case 'SetContactTopics':
      case 'UnsubscribeContact':
        return subscriptionEvents(command, state);
    }
  },
};

/**
 * How long a claim whose contact was never written is kept for it: a contact is written moments after its
 * claim, so a younger claim is a contact still being created, and an older one was left by a crash between the two.
 */
export const UNWRITTEN_CLAIM_GRACE_MS = 5 * 60_000;

export type ContactEmailCommand =
  | {
      type: 'ClaimContactEmail';
      contactId: string;
      /**
       * The holder's contact as the claimant read it (null when it is a contact that lives): `deleted`, or
       * `unwritten` (no stream: being created, or left by a crash after its claim).
       */
      holderSeen: { contactId: string; as: 'deleted' | 'unwritten' } | null;
      at: string;
    }
  | { type: 'ReleaseContactEmail'; contactId: string; at: string };

export type ContactEmailState = { holder: string | null; claimedAt: string | null };

/**
 * A holder keeps the address unless its contact was deleted, or was still unwritten `UNWRITTEN_CLAIM_GRACE_MS`
 * after its claim: taking a younger claim would give the address to two contacts.
 */
function abandoned(
  state: ContactEmailState,
  command: Extract<ContactEmailCommand, { type: 'ClaimContactEmail' }>,
) {
  const seen = command.holderSeen;
  if (!seen || seen.contactId !== state.holder) return false;
  if (seen.as === 'deleted') return true;
  return Date.parse(command.at) - Date.parse(state.claimedAt ?? command.at) >= UNWRITTEN_CLAIM_GRACE_MS;
}

/** The address rule: one contact per address in an organization and mode, compared in lower case. */
export const contactEmailDecider: Decider<ContactEmailCommand, ContactEmailEvent, ContactEmailState> = {
  initialState: { holder: null, claimedAt: null },
  evolve(state, event) {
    switch (event.type) {
      case 'ContactEmailClaimed':
        return { holder: event.data.contactId, claimedAt: event.data.claimedAt };
      case 'ContactEmailReleased':
        return state.holder === event.data.contactId ? { holder: null, claimedAt: null } : state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'ClaimContactEmail': {
        if (state.holder === command.contactId) return [];
        if (state.holder && !abandoned(state, command))
          throw new AppError('contact_exists', 'A contact with this email address exists already.');
        return [
          { type: 'ContactEmailClaimed', data: { contactId: command.contactId, claimedAt: command.at } },
        ];
      }
      case 'ReleaseContactEmail':
        if (state.holder !== command.contactId) return [];
        return [
          { type: 'ContactEmailReleased', data: { contactId: command.contactId, releasedAt: command.at } },
        ];
    }
  },
};
