import { notFound } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { InboundEmailReceived, ReceivedEmailEvent } from './received-email.events.ts';

export type ReceivedEmailCommand =
  | { type: 'RecordReceivedEmail'; email: InboundEmailReceived['data'] }
  | { type: 'KeepReceivedEmailHeaders'; receivedEmailId: string; headersKey: string }
  | { type: 'PurgeReceivedEmail'; receivedEmailId: string; at: string };

export type ReceivedEmailState =
  | { exists: false }
  | {
      exists: true;
      receivedEmailId: string;
      rawKey: string;
      receivedAt: string;
      /** The blobs deleted when the retention ends. */
      blobKeys: string[];
      contentKey: string | null;
      /** Where its headers are kept; undefined for a message recorded with them in its content blob. */
      headersKey: string | null | undefined;
      purged: boolean;
    };

/** The blobs a received email keeps until its retention ends (not its headers: they are metadata). */
const blobKeysOf = (d: InboundEmailReceived['data']) => [
  d.rawKey,
  ...(d.contentKey ? [d.contentKey] : []),
  ...d.attachments.map((a) => a.blobKey),
];

/** A received email: recorded once, its content purged once when the retention ends, its headers kept. */
export const receivedEmailDecider: Decider<ReceivedEmailCommand, ReceivedEmailEvent, ReceivedEmailState> = {
  initialState: { exists: false },
  evolve(state, event) {
    switch (event.type) {
      case 'InboundEmailReceived':
        return {
          exists: true,
          receivedEmailId: event.data.receivedEmailId,
          rawKey: event.data.rawKey,
          receivedAt: event.data.receivedAt,
          blobKeys: blobKeysOf(event.data),
          contentKey: event.data.contentKey,
          headersKey: event.data.headersKey,
          purged: false,
        };
      case 'ReceivedEmailHeadersKept':
        return state.exists ? { ...state, headersKey: event.data.headersKey } : state;
      case 'ReceivedEmailPurged':
        return state.exists ? { ...state, purged: true } : state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'RecordReceivedEmail':
        // Recorded already (a retried command): nothing more to do.
        return state.exists ? [] : [{ type: 'InboundEmailReceived', data: command.email }];
      case 'KeepReceivedEmailHeaders':
        if (!state.exists) throw notFound('Received email', command.receivedEmailId);
        // Kept apart already (or from the start), or too late: the content that held them is gone.
        if (state.headersKey !== undefined || state.purged) return [];
        return [
          {
            type: 'ReceivedEmailHeadersKept',
            data: { receivedEmailId: command.receivedEmailId, headersKey: command.headersKey },
          },
        ];
      case 'PurgeReceivedEmail':
        if (!state.exists) throw notFound('Received email', command.receivedEmailId);
        if (state.purged) return [];
        return [
          {
            type: 'ReceivedEmailPurged',
            data: { receivedEmailId: command.receivedEmailId, purgedAt: command.at },
          },
        ];
    }
  },
};
