import type { Decider } from '../../platform/eventstore/command.ts';
import type { InboundMessageEvent } from './received-email.events.ts';

/**
 * How long a message's claim holds: longer than senders keep a message queued and retry it (RFC 5321 suggests
 * giving up after 4 to 5 days). The same bytes with the same envelope after that are a new message.
 */
export const INBOUND_RETRY_WINDOW_MS = 7 * 24 * 3600_000;

export type InboundMessageCommand = {
  type: 'ClaimInboundMessage';
  /** A new id, which a first attempt claims; a retry within the window keeps the claimed one instead. */
  receivedEmailId: string;
  at: string;
};

/** The id claimed last, and when; null before any claim. */
export type InboundMessageState = { receivedEmailId: string; claimedAt: string } | null;

/**
 * The received email a message that arrived for an organization is recorded as (docs/receiving.md, "Retries"):
 * the first attempt claims an id, and every attempt within INBOUND_RETRY_WINDOW_MS of it records the message
 * under that id, which its stream's expected revision lets happen once.
 */
export const inboundMessageDecider: Decider<InboundMessageCommand, InboundMessageEvent, InboundMessageState> =
  {
    initialState: null,
    evolve: (_, event) => ({ receivedEmailId: event.data.receivedEmailId, claimedAt: event.data.claimedAt }),
    decide(command, state) {
      if (state && Date.parse(command.at) - Date.parse(state.claimedAt) < INBOUND_RETRY_WINDOW_MS) return [];
      return [
        {
          type: 'InboundMessageClaimed',
          data: { receivedEmailId: command.receivedEmailId, claimedAt: command.at },
        },
      ];
    },
  };
