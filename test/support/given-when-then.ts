import { expect } from 'vitest';
import { AppError, type ErrorCode } from '../../platform/errors.ts';
import type { Decider, DomainEvent } from '../../platform/eventstore/command.ts';

/**
 * Given these events, when this command, then these events (or this error code). Reads as a table:
 *   spec(decider).given([...]).when(cmd).then([...])
 */
export function spec<C, E extends DomainEvent, S>(decider: Decider<C, E, S>) {
  return {
    given(events: E[]) {
      const state = events.reduce(decider.evolve, decider.initialState);
      return {
        when(command: C) {
          const run = () => decider.decide(command, state);
          return {
            // biome-ignore lint/suspicious/noThenProperty: given/when/then reads best; this object is never awaited.
            then(expected: E[] | ((events: E[]) => void)) {
              const events = run();
              if (typeof expected === 'function') expected(events);
              else expect(events).toEqual(expected);
            },
            thenFails(code: ErrorCode, message?: RegExp) {
              let error: unknown;
              try {
                run();
              } catch (e) {
                error = e;
              }
              expect(error, 'expected the decider to refuse').toBeInstanceOf(AppError);
              expect((error as AppError).code).toBe(code);
              if (message) expect((error as AppError).message).toMatch(message);
            },
          };
        },
      };
    },
  };
}
