import { expect, it } from 'vitest';
import { AppError, type ErrorCode } from '../../platform/errors.ts';
import type { Decider, DomainEvent } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';

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

/**
 * The rule every owned aggregate keeps: to another organization, and to the other mode, it does not exist. Adds a
 * test of each: `command`, which the owner may send after `history`, sent by them is refused as not_found.
 */
export function itHidesFromOtherCallers<C, E extends DomainEvent, S>(
  decider: Decider<C, E, S>,
  history: E[],
  command: C & { orgId: string; mode: Mode },
) {
  const others: [string, { orgId?: string; mode?: Mode }][] = [
    ['another organization', { orgId: 'org_2' }],
    ['the other mode', { mode: command.mode === 'live' ? 'test' : 'live' }],
  ];
  it.each(others)('hides it from %s', (_, other) =>
    spec(decider)
      .given(history)
      .when({ ...command, ...other })
      .thenFails('not_found'),
  );
}
