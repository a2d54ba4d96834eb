import type { z } from 'zod';
import { AppError } from '../errors.ts';
import { useFieldMessages } from '../field-messages.ts';

// Every parse of the process answers in the API's words where a schema gives none (field-messages.ts).
useFieldMessages();

function pathOf(path: PropertyKey[]): string {
  return path.reduce<string>(
    (out, p) => (typeof p === 'number' ? `${out}[${p}]` : out ? `${out}.${String(p)}` : String(p)),
    '',
  );
}

/** Parses with a zod schema; failure is a 422 whose message names the field. */
export function parse<S extends z.ZodType>(schema: S, value: unknown, where = 'body'): z.infer<S> {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = pathOf(issue.path);
  const message =
    issue.code === 'unrecognized_keys'
      ? `Unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `\`${field ? `${field}.` : ''}${k}\``).join(', ')} in ${where}`
      : `\`${field || where}\`: ${issue.message}`;
  throw new AppError('validation_error', message);
}
