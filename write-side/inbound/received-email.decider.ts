import { notFound } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { InboundEmailReceived, ReceivedEmailEvent } from './received-email.events.ts';

export type ReceivedEmailCommand =
  | { type: 'RecordReceivedEmail'; email: InboundEmailReceived['data'] }
  | { type: 'PurgeReceivedEmail'; receivedEmailId: string; at: string };

export type ReceivedEmailState =
  | { exists: false }
  | { exists: true; receivedEmailId: string; blobKeys: string[]; purged: boolean };

/** The blobs a received email keeps until its retention ends. */
const blobKeysOf = (d: InboundEmailReceived['data']) => [
  d.rawKey,
  ...(d.contentKey ? [d.contentKey] : []),
  ...d.attachments.map((a) => a.blobKey),
];

/** A received email: recorded once, its content purged once when the retention ends. */
export const receivedEmailDecider: Decider<ReceivedEmailCommand, ReceivedEmailEvent, ReceivedEmailState> = {
  initialState: { exists: false },
  evolve(state, event) {
    switch (event.type) {
      case 'InboundEmailReceived':
        return {
          exists: true,
          receivedEmailId: event.data.receivedEmailId,
          blobKeys: blobKeysOf(event.data),
          purged: false,
        };
      case 'ReceivedEmailPurged':
        return state.exists ? { ...state, purged: true } : state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'RecordReceivedEmail':
        // Recorded already (a retried command): nothing more to do.
        return state.exists ? [] : [{ type: 'InboundEmailReceived', data: command.email }];
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
