import { expect } from 'vitest';
import type { ApiResponse } from './service.ts';

/**
 * Each body of `cases`, as `send` sends it, is refused with 422 validation_error, and the message names what is
 * wrong: it contains the string, or matches the pattern, given beside the body.
 */
export async function expectValidationErrors(
  send: (body: unknown) => Promise<ApiResponse>,
  cases: [body: unknown, names: string | RegExp][],
) {
  for (const [body, names] of cases) {
    const r = await send(body);
    expect(r.status, `${JSON.stringify(body)?.slice(0, 200)} -> ${JSON.stringify(r.body)}`).toBe(422);
    expect(r.body.error.code).toBe('validation_error');
    if (typeof names === 'string') expect(r.body.error.message).toContain(names);
    else expect(r.body.error.message).toMatch(names);
  }
}
