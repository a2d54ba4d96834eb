import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../platform/db/unavailable.ts';
import { AppError } from '../../platform/errors.ts';

/** Errors as node-postgres hands them over (server errors carry severity and SQLSTATE). */
const server = (code: string, severity: string, message: string) =>
  Object.assign(new Error(message), { code, severity });
const answers = (expected: boolean, errors: unknown[]) => {
  for (const error of errors) expect(isDatabaseUnavailable(error), String(error)).toBe(expected);
};

describe('isDatabaseUnavailable', () => {
  it('says yes to a lost or refused connection, however it shows', () =>
    answers(true, [
      server('57P01', 'FATAL', 'terminating connection due to administrator command'),
      server('57P03', 'FATAL', 'the database system is starting up'),
      server('55000', 'FATAL', 'database "x" is not currently accepting connections'),
      server('53300', 'FATAL', 'sorry, too many clients already'),
      server('08006', 'ERROR', 'connection failure'),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      new Error('Connection terminated unexpectedly'),
      new Error('Connection terminated due to connection timeout'),
      new Error('timeout exceeded when trying to connect'),
      new Error('Client has encountered a connection error and is not queryable'),
      new Error('a wrapper', { cause: new Error('Connection terminated unexpectedly') }),
    ]));

  it('says no to what is about the statement or the request', () =>
    answers(false, [
      server('22P02', 'ERROR', 'invalid input syntax for type json'),
      server('23505', 'ERROR', 'duplicate key value violates unique constraint "x"'),
      server('40001', 'ERROR', 'could not serialize access due to concurrent update'),
      server('57014', 'ERROR', 'canceling statement due to statement timeout'),
      new AppError('validation_error', 'bad'),
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      undefined,
      'Connection terminated',
    ]));
});
