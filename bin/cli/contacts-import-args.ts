import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

/** `contacts import`'s options. */
export const IMPORT_OPTIONS = {
  org: { type: 'string' },
  mode: { type: 'string', default: 'live' },
  audience: { type: 'string' },
} as const;

/** `contacts import`'s arguments with its file (its positionals) resolved against this process's directory. */
export function withAbsoluteFile(rest: string[]): string[] {
  const { tokens } = parseArgs({
    args: rest,
    options: IMPORT_OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  return rest.map((arg, i) =>
    tokens.some((t) => t.kind === 'positional' && t.index === i) ? resolve(arg) : arg,
  );
}
