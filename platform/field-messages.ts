import { z } from 'zod';

/** A type as a request's reader names it. */
const NOUNS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  bigint: 'an integer',
  boolean: 'true or false',
  array: 'an array',
  object: 'an object',
  record: 'an object',
  null: 'null',
};
const nounOf = (type: string) => NOUNS[type] ?? type;

const received = (input: unknown) =>
  input === null
    ? 'null'
    : Array.isArray(input)
      ? 'an array'
      : typeof input === 'boolean'
        ? 'a boolean'
        : nounOf(typeof input);

/** A bound as a rule says it: `at most 200 characters`, `fewer than 10 items`, `at least 1`. */
function bound(side: 'most' | 'least', origin: string, limit: unknown, inclusive: boolean): string {
  const counted = origin === 'array' || origin === 'set';
  const unit = origin === 'string' ? ' character' : counted ? ' item' : '';
  const word = inclusive ? `at ${side}` : side === 'most' ? (unit ? 'fewer than' : 'less than') : 'more than';
  return `${counted ? 'have' : 'be'} ${word} ${String(limit)}${unit}${unit && Number(limit) !== 1 ? 's' : ''}`;
}

/**
 * What a field breaks, in the words of the API's own messages (`must be …`, `is required`), where a schema gives
 * none of its own: zod's ("Invalid input: expected string, received number", "Too big: expected string to have
 * <=200 characters") name its types, not the rule. Others keep zod's.
 */
function fieldMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      // A number that is not an integer, or no number at all (an environment variable read as one).
      if (typeof issue.input === 'number' && (issue.expected === 'int' || Number.isNaN(issue.input)))
        return `must be ${nounOf(issue.expected)}`;
      return `must be ${nounOf(issue.expected)}, not ${received(issue.input)}`;
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'too_big':
      return `must ${bound('most', issue.origin, issue.maximum, issue.inclusive ?? true)}`;
    case 'too_small':
      if (issue.minimum === 1 && (issue.origin === 'string' || issue.origin === 'array'))
        return 'must not be empty';
      return `must ${bound('least', issue.origin, issue.minimum, issue.inclusive ?? true)}`;
    default:
      return undefined;
  }
}

/**
 * Every parse in this process answers in these words, where a schema gives none of its own: installed by the two
 * modules that parse input, platform/config.ts (the environment) and platform/http/validate.ts (requests).
 */
export function useFieldMessages(): void {
  z.config({ customError: fieldMessage });
}
