import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../platform/db/database.ts';
import { createLogger } from '../../platform/logger.ts';
import { openTestDatabase } from '../support/databases.ts';

/**
 * Errors reach the log without the personal data they carry. Real PostgreSQL errors, about email content, go
 * through the real logger into a buffer: their detail, context and quoting messages must not come out, their
 * code and the names of the schema's objects must.
 */

const SUBJECT = 'Secret plans of Alice Wonder';
const ADDRESS = 'alice.wonder@private.example';

let db: Database;
let dispose: () => Promise<void>;
beforeAll(async () => {
  ({ db, dispose } = await openTestDatabase());
  await db.exec(
    'CREATE TABLE outbox (id text PRIMARY KEY, recipient text NOT NULL, CONSTRAINT outbox_recipient_key UNIQUE (recipient))',
  );
});
afterAll(async () => {
  await dispose?.();
});

/** The logger as the service makes it, writing to memory. */
function bufferedLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { log: createLogger('info', destination), text: () => lines.join('') };
}

const failure = (sql: string, params: unknown[]) =>
  db.query(sql, params).then(
    () => {
      throw new Error(`expected ${sql} to fail`);
    },
    (error) => error,
  );

describe('errors in the log', () => {
  it('keep the code and the names of objects, never the data of a failed statement', async () => {
    // An email's JSON that PostgreSQL refuses: `where` quotes it ("JSON data, line 1: {"subject":…").
    const json = await failure('SELECT $1::json', [`{"subject": "${SUBJECT}", "to": ["${ADDRESS}"], }`]);
    expect(json.code).toBe('22P02');
    expect(json.where).toContain(ADDRESS); // what must not be logged is there
    // A value quoted in the message itself.
    const uuid = await failure('SELECT $1::uuid', [ADDRESS]);
    expect(uuid.message).toContain(ADDRESS);
    // A unique violation: `detail` says "Key (recipient)=(…) already exists".
    await db.query('INSERT INTO outbox VALUES ($1, $2)', ['a', ADDRESS]);
    const duplicate = await failure('INSERT INTO outbox VALUES ($1, $2)', ['b', ADDRESS]);
    expect(duplicate.detail).toContain(ADDRESS);
    // A failure elsewhere whose message quotes the input, and an error carrying its data in fields of its own.
    const parse = (() => {
      try {
        JSON.parse(`{"subject": "${SUBJECT}" oops`);
      } catch (error) {
        return error;
      }
    })();
    const own = Object.assign(new Error(`could not deliver to <${ADDRESS}>`, { cause: duplicate }), {
      code: 'EENVELOPE',
      recipient: ADDRESS,
      body: SUBJECT,
      params: [SUBJECT, ADDRESS],
    });

    const { log, text } = bufferedLogger();
    log.error({ err: json }, 'projection batch failed');
    log.error({ err: uuid }, 'unhandled error');
    log.error({ err: duplicate }, 'unhandled error');
    log.warn({ error: parse }, 'parse failed');
    log.error(own, 'delivery failed');

    const out = text();
    expect(out).not.toContain('Secret plans');
    expect(out).not.toContain('Wonder');
    expect(out).not.toContain('alice.wonder');
    expect(out).not.toContain('private.example');
    for (const [line, code] of out
      .trim()
      .split('\n')
      .map((l, i) => [l, ['22P02', '22P02', '23505', undefined, 'EENVELOPE'][i]] as const))
      if (code) expect(line).toContain(`"code":"${code}"`);
    const [, , dup, , delivery] = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(dup.err).toMatchObject({
      code: '23505',
      constraint: 'outbox_recipient_key',
      table: 'outbox',
      message: expect.stringContaining('duplicate key value violates unique constraint'),
    });
    expect(dup.err.stack).toContain(' at ');
    expect(delivery.err.cause).toMatchObject({ code: '23505' });
    expect(delivery.err.message).toContain('could not deliver to');
  });
});
