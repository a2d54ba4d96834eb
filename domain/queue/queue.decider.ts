import { AppError } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import { normalizeDomainName } from '../domains/domain-name.ts';
import type { QueueEvent } from './queue.events.ts';

/** What every control names: the destination (a domain name) and its scope (an organization, or null: every one). */
type Target = { destination: string; orgId: string | null; at: string };

export type QueueCommand =
  | ({ type: 'PauseDelivery'; until: string; reason: string | null } & Target)
  | ({ type: 'ResumeDelivery' } & Target)
  | ({ type: 'RetryDelivery' } & Target)
  | ({ type: 'GiveUpDelivery' } & Target);

/** The pause in force as the stream says, if any (it ends on its own at `until`: compared when read). */
export type QueueState = { pause: { until: string; reason: string | null } | null };

/** The longest pause an operator may set: a longer stop of a destination is a decision to give its mail up. */
export const MAX_PAUSE_MS = 30 * 24 * 3600_000;

/**
 * A destination as the queue names it: a recipient domain, normalized by the domain-name rules (ASCII, lower
 * case). Throws validation_error naming `destination`.
 */
export function queueDestination(input: string): string {
  const r = normalizeDomainName(input);
  if ('error' in r) throw new AppError('validation_error', `\`destination\` ${r.error}`);
  return r.name;
}

function pauseUntil(command: Extract<QueueCommand, { type: 'PauseDelivery' }>): string {
  const until = Date.parse(command.until);
  const at = Date.parse(command.at);
  if (Number.isNaN(until)) throw new AppError('validation_error', '`until` must be a date and time');
  if (until <= at) throw new AppError('validation_error', '`until` must be in the future');
  if (until - at > MAX_PAUSE_MS) throw new AppError('validation_error', '`until` must be within 30 days');
  return new Date(until).toISOString();
}

export const queueDecider: Decider<QueueCommand, QueueEvent, QueueState> = {
  initialState: { pause: null },
  evolve(state, event) {
    switch (event.type) {
      case 'DeliveryPaused':
        return { pause: { until: event.data.until, reason: event.data.reason } };
      case 'DeliveryResumed':
        return { pause: null };
      default:
        return state;
    }
  },
  decide(command, state) {
    const target = { destination: queueDestination(command.destination), orgId: command.orgId };
    switch (command.type) {
      case 'PauseDelivery': {
        const until = pauseUntil(command);
        return [
          { type: 'DeliveryPaused', data: { ...target, until, reason: command.reason, at: command.at } },
        ];
      }
      case 'ResumeDelivery': {
        // Nothing to resume: no pause, or one that has ended on its own.
        const live = state.pause && Date.parse(state.pause.until) > Date.parse(command.at);
        return live ? [{ type: 'DeliveryResumed', data: { ...target, at: command.at } }] : [];
      }
      case 'RetryDelivery':
        return [{ type: 'DeliveryRetryRequested', data: { ...target, at: command.at } }];
      case 'GiveUpDelivery':
        return [{ type: 'DeliveryGiveUpRequested', data: { ...target, at: command.at } }];
    }
  },
};
