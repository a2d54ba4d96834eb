import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { keyObject } from './crypto.ts';
import type { Queryable } from './db/database.ts';
import type { Migration } from './db/migrations.ts';

/**
 * Personal data in the log, sealed with a key of its own per data subject (a contact): events carry it encrypted,
 * the key lives in `personal_data_keys`, and forgetting the subject erases the key and leaves its row as a
 * tombstone (`key` null, `forgotten_at`). The events stay, and what they held of the person can no longer be read,
 * by anyone or any rebuild (crypto-shredding). A forgotten subject never gets a key again: a write that raced the
 * forgetting (sealed after it) would otherwise make a fresh key, under which the old events fail to open instead
 * of reading as forgotten. AES-256-GCM.
 */
export const personalDataMigrations: Migration[] = [
  {
    id: 'personal-data-001',
    sql: `
CREATE TABLE IF NOT EXISTS personal_data_keys (
  subject text PRIMARY KEY,
  key bytea NOT NULL
)`,
  },
  {
    id: 'personal-data-002',
    sql: `
ALTER TABLE personal_data_keys ALTER COLUMN key DROP NOT NULL;
ALTER TABLE personal_data_keys ADD COLUMN IF NOT EXISTS forgotten_at timestamptz;
ALTER TABLE personal_data_keys ADD CONSTRAINT personal_data_keys_key_or_forgotten
  CHECK ((key IS NULL) = (forgotten_at IS NOT NULL))`,
  },
];

/** Sealing for a subject that was forgotten: refused, so that it never gets a key again. */
export class PersonalDataForgottenError extends Error {
  readonly subject: string;
  constructor(subject: string) {
    super(`the personal data of ${subject} was forgotten: nothing more is sealed for it`);
    this.subject = subject;
    this.name = 'PersonalDataForgottenError';
  }
}

const VERSION = 'pd1';
const KEY_BYTES = 32;
const IV_BYTES = 12;

/** The subject's key; null when it has none or was forgotten (a tombstone: never made again). */
async function keyOf(db: Queryable, subject: string, create: boolean): Promise<Buffer | null> {
  if (create) {
    await db.query(
      'INSERT INTO personal_data_keys (subject, key) VALUES ($1, $2) ON CONFLICT (subject) DO NOTHING',
      [subject, randomBytes(KEY_BYTES)],
    );
  }
  const { rows } = await db.query<{ key: Buffer | null }>(
    'SELECT key FROM personal_data_keys WHERE subject = $1',
    [subject],
  );
  return rows[0]?.key ?? null;
}

/**
 * `value` sealed for `subject` (its key made on first use): the text an event carries. Throws
 * PersonalDataForgottenError once the subject was forgotten.
 */
export async function sealPersonalData(db: Queryable, subject: string, value: unknown): Promise<string> {
  const key = await keyOf(db, subject, true);
  if (!key) throw new PersonalDataForgottenError(subject);
  return seal(key, subject, value);
}

function seal(key: Buffer, subject: string, value: unknown, iv = randomBytes(IV_BYTES)): string {
  const cipher = createCipheriv('aes-256-gcm', keyObject(key), iv);
  cipher.setAAD(Buffer.from(subject));
  const sealed = cipher.update(JSON.stringify(value), 'utf8');
  cipher.final(); // GCM is a stream mode: nothing is held back
  return `${VERSION}.${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${sealed.toString('base64url')}`;
}

/** What `sealed` holds, or null once `subject` was forgotten. */
export async function openPersonalData<T>(db: Queryable, subject: string, sealed: string): Promise<T | null> {
  const key = await keyOf(db, subject, false);
  return key ? open<T>(key, subject, sealed) : null;
}

function open<T>(key: Buffer, subject: string, sealed: string): T {
  const [version, iv, tag, data] = sealed.split('.');
  if (version !== VERSION) throw new Error(`unknown sealing ${version}`);
  const decipher = createDecipheriv('aes-256-gcm', keyObject(key), Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(subject));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  const text = decipher.update(Buffer.from(data, 'base64url')).toString('utf8');
  decipher.final(); // checks the tag: throws when the data or the subject is not what was sealed
  return JSON.parse(text) as T;
}

/**
 * Erases `subject`'s key, leaving the tombstone: everything sealed for it is unreadable from now on, and nothing
 * is sealed for it again (a subject never sealed for is forgotten all the same).
 */
export async function forgetPersonalData(db: Queryable, subject: string): Promise<void> {
  await db.query(
    `INSERT INTO personal_data_keys (subject, key, forgotten_at) VALUES ($1, NULL, now())
     ON CONFLICT (subject) DO UPDATE SET key = NULL, forgotten_at = coalesce(personal_data_keys.forgotten_at, now())`,
    [subject],
  );
}

/**
 * Erases the key of every subject whose name starts with `prefix` (all of an organization's, say), leaving their
 * tombstones; the number of keys erased. A subject first sealed for after this gets a key (only subjects that had
 * one are known here).
 */
export async function forgetPersonalDataByPrefix(db: Queryable, prefix: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE personal_data_keys SET key = NULL, forgotten_at = now()
     WHERE starts_with(subject, $1) AND key IS NOT NULL`,
    [prefix],
  );
  return rowCount ?? 0;
}

/**
 * Each value sealed for its subject, as `sealPersonalData` does, in two statements whatever their number (a
 * contact import seals hundreds at once; one when every subject is new). Subjects must differ. Null for a subject
 * that was forgotten (nothing is sealed for it, as `sealPersonalData` refuses).
 */
export async function sealPersonalDataMany(
  db: Queryable,
  items: { subject: string; value: unknown }[],
): Promise<(string | null)[]> {
  if (items.length === 0) return [];
  const subjects = items.map((i) => i.subject);
  // The keys and IVs of all items from one draw of the generator: a draw per item costs more than the cipher.
  const random = randomBytes(items.length * (KEY_BYTES + IV_BYTES));
  const newKey = (i: number) => random.subarray(i * KEY_BYTES, (i + 1) * KEY_BYTES);
  const iv = (i: number) => {
    const from = items.length * KEY_BYTES + i * IV_BYTES;
    return random.subarray(from, from + IV_BYTES);
  };
  // A subject inserted now has the key made here: only the subjects come back.
  const { rows } = await db.query<{ subject: string }>(
    `INSERT INTO personal_data_keys (subject, key)
     SELECT s, decode(k, 'hex') FROM unnest($1::text[], $2::text[]) AS x(s, k) ON CONFLICT (subject) DO NOTHING
     RETURNING subject`,
    [subjects, items.map((_, i) => newKey(i).toString('hex'))],
  );
  const index = new Map(subjects.map((s, i) => [s, i]));
  const keys = new Map<string, Buffer>(rows.map((r) => [r.subject, newKey(index.get(r.subject)!)]));
  // Subjects that had a key already keep it: read only those (a forgotten one has none).
  const known = subjects.filter((s) => !keys.has(s));
  if (known.length > 0) {
    const existing = await db.query<{ subject: string; key: Buffer }>(
      'SELECT subject, key FROM personal_data_keys WHERE subject = ANY($1::text[]) AND key IS NOT NULL',
      [known],
    );
    for (const r of existing.rows) keys.set(r.subject, r.key);
  }
  return items.map(({ subject, value }, i) => {
    const key = keys.get(subject);
    return key ? seal(key, subject, value, iv(i)) : null;
  });
}

/** What each sealed value holds, as `openPersonalData` does (null once forgotten), with one look-up of the keys. */
export async function openPersonalDataMany<T>(
  db: Queryable,
  items: { subject: string; sealed: string }[],
): Promise<(T | null)[]> {
  if (items.length === 0) return [];
  const { rows } = await db.query<{ subject: string; key: Buffer }>(
    'SELECT subject, key FROM personal_data_keys WHERE subject = ANY($1::text[]) AND key IS NOT NULL',
    [items.map((i) => i.subject)],
  );
  const keys = new Map(rows.map((r) => [r.subject, r.key]));
  return items.map(({ subject, sealed }) => {
    const key = keys.get(subject);
    return key ? open<T>(key, subject, sealed) : null;
  });
}
