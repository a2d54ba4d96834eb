import type { Mode } from '../../platform/eventstore/types.ts';

/** What a contact's events carry sealed (platform/personal-data.ts): forgotten when the contact is deleted. */
export interface ContactPersonalData {
  email: string;
  firstName: string | null;
  lastName: string | null;
  properties: Record<string, string | number | boolean>;
}

export type ContactEvent =
  | {
      type: 'ContactCreated';
      data: {
        contactId: string;
        orgId: string;
        mode: Mode;
        /** The address's claim (contact-email.decider.ts): a keyed hash, no address. */
        emailKey: string;
        /** ContactPersonalData, sealed for the contact. */
        personal: string;
        unsubscribed: boolean;
        consentGivenAt: string | null;
        audienceIds: string[];
        createdAt: string;
      };
    }
  | {
      /** The contact as it is now. */
      type: 'ContactUpdated';
      data: {
        contactId: string;
        emailKey: string;
        personal: string;
        unsubscribed: boolean;
        consentGivenAt: string | null;
        updatedAt: string;
      };
    }
  /**
   * From everything (`topicId` null or absent), or from one topic; `emailId`: by the unsubscribe link (or page, or
   * mailto) of that email, `broadcastId` its broadcast's.
   */
  | {
      type: 'ContactUnsubscribed';
      data: {
        contactId: string;
        topicId?: string | null;
        broadcastId?: string;
        emailId?: string;
        unsubscribedAt: string;
      };
    }
  | {
      type: 'ContactTopicSubscriptionChanged';
      data: { contactId: string; topicId: string; subscription: 'opt_in' | 'opt_out'; changedAt: string };
    }
  | { type: 'ContactAddedToAudience'; data: { contactId: string; audienceId: string; addedAt: string } }
  | { type: 'ContactRemovedFromAudience'; data: { contactId: string; audienceId: string; removedAt: string } }
  | { type: 'ContactDeleted'; data: { contactId: string; deletedAt: string } };

/** An address is one contact's per organization and mode: its claim stream, named by the keyed hash. */
export type ContactEmailEvent =
  | { type: 'ContactEmailClaimed'; data: { contactId: string; claimedAt: string } }
  | { type: 'ContactEmailReleased'; data: { contactId: string; releasedAt: string } };

export const contactStream = (contactId: string) => `contact-${contactId}`;
export const contactEmailStream = (emailKey: string) => `contactemail-${emailKey}`;
