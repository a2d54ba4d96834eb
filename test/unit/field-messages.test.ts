import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parse } from '../../platform/http/validate.ts';

/** The message a request's body gets for `value` in field `f` of `schema`. */
const messageOf = (schema: z.ZodType, value: unknown) => {
  try {
    parse(z.strictObject({ f: schema }), value === undefined ? {} : { f: value });
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('parsed');
};

describe('a field the schema gives no message of its own for', () => {
  it.each([
    ['`f`: is required', z.string(), undefined],
    ['`f`: must be a string, not a number', z.string(), 5],
    ['`f`: must be a string, not a boolean', z.string(), true],
    ['`f`: must be a string, not null', z.string(), null],
    ['`f`: must be true or false, not a string', z.boolean(), 'yes'],
    ['`f`: must be an array, not an object', z.array(z.string()), {}],
    ['`f[1]`: must be a string, not a number', z.array(z.string()), ['a', 5]],
    ['`f`: must be an object, not an array', z.record(z.string(), z.string()), []],
    ['`f`: must be an integer', z.number().int(), 1.5],
    ['`f`: must be a number', z.coerce.number(), 'abc'],
    ['`f`: must be one of "a", "b"', z.enum(['a', 'b']), 'c'],
    ['`f`: must be "a"', z.literal('a'), 'c'],
    ['`f`: must be at most 3 characters', z.string().max(3), 'abcd'],
    ['`f`: must not be empty', z.string().min(1), ''],
    ['`f`: must be at least 2 characters', z.string().min(2), 'a'],
    ['`f`: must have at most 1 item', z.array(z.string()).max(1), ['a', 'b']],
    ['`f`: must not be empty', z.array(z.string()).min(1), []],
    ['`f`: must have at most 2 items', z.array(z.string()).max(2), ['a', 'b', 'c']],
    ['`f`: must be at most 10', z.number().max(10), 11],
    ['`f`: must be less than 10', z.number().lt(10), 10],
  ])('%s', (message, schema, value) => {
    expect(messageOf(schema, value)).toBe(message);
  });

  it('keeps the message a schema gives', () => {
    expect(messageOf(z.string({ error: 'must be a name' }), 5)).toBe('`f`: must be a name');
    expect(messageOf(z.string().max(3, 'is too long'), 'abcd')).toBe('`f`: is too long');
  });
});
