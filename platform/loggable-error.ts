/**
 * What the log keeps of an error: nothing a person wrote or is known by. PostgreSQL's errors carry the data of
 * the statement that failed (`detail`: "Key (email)=(…)", `where`: "JSON data, line 1: {"subject":…"), and other
 * errors carry bodies, parameters or addresses in fields of their own: only the fields below are kept, and of
 * the message only what cannot quote data.
 */

/** Fields that name things of the code or the schema, never data: kept when they are short strings or numbers. */
const SAFE_FIELDS = [
  'code',
  'severity',
  'routine',
  'schema',
  'table',
  'column',
  'dataType',
  'constraint',
  'status',
  'statusCode',
  'errno',
  'syscall',
] as const;

const MAX_MESSAGE = 300;
const MAX_DEPTH = 3;

/** A PostgreSQL error (node-postgres gives it the server's severity and a five-character SQLSTATE). */
const isServerError = (e: any) => typeof e.severity === 'string' && /^[0-9A-Z]{5}$/.test(String(e.code));

/**
 * The message's first line (later lines hold the input that a parser quotes), with quoted passages and anything
 * shaped like an email address replaced by "…". PostgreSQL's data exceptions (SQLSTATE class 22: "invalid input
 * syntax for type json", "value … is out of range") are about the input itself: only their code is kept.
 */
function safeMessage(e: any): string | undefined {
  if (isServerError(e) && String(e.code).startsWith('22')) return undefined;
  if (typeof e.message !== 'string') return undefined;
  return e.message
    .split('\n')[0]
    .replace(/"[^"]*"?/g, '"…"')
    .replace(/[^\s"'<>()[\],;:]+@[^\s"'<>()[\],;:]+/g, '…@…')
    .slice(0, MAX_MESSAGE);
}

/** The stack's frames only: its first line repeats the message. */
const framesOf = (stack: unknown) =>
  typeof stack === 'string'
    ? stack
        .split('\n')
        .filter((line) => /^\s+at /.test(line))
        .join('\n')
    : undefined;

export function loggableError(error: unknown, depth = 0): unknown {
  if (error === null || error === undefined) return error;
  if (typeof error !== 'object') return { message: safeMessage({ message: String(error) }) };
  const e = error as any;
  const out: Record<string, unknown> = {
    type: e.constructor?.name ?? 'Object',
    ...(typeof e.name === 'string' && { name: e.name }),
    message: safeMessage(e),
  };
  for (const field of SAFE_FIELDS) {
    const v = e[field];
    if (typeof v === 'number' || (typeof v === 'string' && v.length <= 64)) out[field] = v;
  }
  const stack = framesOf(e.stack);
  if (stack) out.stack = stack;
  if (depth < MAX_DEPTH) {
    if (e.cause !== undefined) out.cause = loggableError(e.cause, depth + 1);
    if (Array.isArray(e.errors))
      out.errors = e.errors.slice(0, 5).map((x: unknown) => loggableError(x, depth + 1));
  }
  return out;
}
