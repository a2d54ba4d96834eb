/**
 * Contact import throughput: N contacts imported from a CSV file through the real code path (the file stored as
 * `POST /v1/audiences/{id}/contacts/import` stores it, then worked by the contact-import process: claims, sealed
 * personal data, ContactCreated events, progress), beside two raw baselines measured in the same run: the CSV's
 * rows written with multi-row INSERTs of 1,000 into a plain table in the same database, and every row the import
 * wrote (its events, personal-data keys, `contacts` rows and memberships) written again the same way into copies of
 * their tables, indexes included.
 *
 * Two figures for Postline: the job `completed` (every event committed), and the contacts readable (the
 * `contacts` projection caught up). Part of `npm run bench:broadcast`.
 */
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import type { Database } from '../platform/db/database.ts';
import type { Mode } from '../platform/eventstore/types.ts';
import type { Services } from '../platform/services.ts';
import { ContactImportProcess } from '../processes/contact-import/contact-import.process.ts';
import {
  readContactImport,
  startContactImport,
} from '../write-side/contact-imports/contact-import.commands.ts';
import { type cpuMeter, cpuText } from './cpu.ts';

export interface ContactImportBenchResult {
  contacts: number;
  /** Seconds until the job completed (the file stored, every row's events committed). */
  importSeconds: number;
  /** Seconds until the contacts were readable through the API's read model. */
  readableSeconds: number;
  /** Seconds for the raw multi-row INSERTs of the CSV's rows. */
  rawSeconds: number;
  /** Seconds for the raw multi-row INSERTs of the rows the import wrote. */
  sameRowsSeconds: number;
  /** The report's lines. */
  text: string[];
}

const HEADER = 'email,first_name,last_name,plan,city';
/** The `i`th row; `renewed`, with the other plan (a re-import that updates every contact). */
const row = (i: number, renewed = false) =>
  `person${i}@bench.example.org,First${i},"Last, ${i}",${(i % 3 === 0) !== renewed ? 'pro' : 'free'},City ${i % 100}`;

/** The baseline's table: the columns of `contacts` with their types, its primary key and none of its other indexes. */
const RAW_SCHEMA = `
DROP TABLE IF EXISTS raw_contacts;
CREATE TABLE raw_contacts (LIKE contacts, PRIMARY KEY (id))`;

/**
 * `n` contacts into `audienceId` of `tenant` from one CSV file, stored as the API stores it and worked by the
 * contact-import process until the job has `completed` (checked).
 */
export async function importContacts(
  services: Services,
  tenant: { orgId: string; mode: Mode },
  audienceId: string,
  n: number,
  renewed = false,
): Promise<void> {
  const csv = Buffer.from([HEADER, ...Array.from({ length: n }, (_, i) => row(i, renewed))].join('\n'));
  const { importId } = await startContactImport(
    services,
    { ...tenant, actor: 'bench' },
    { audienceId, file: Readable.from([csv]), maxBytes: csv.length },
  );
  await new ContactImportProcess(services).runOnce();
  const state = await readContactImport(services, importId);
  if (!state.exists || state.status !== 'completed' || state.processed !== n)
    throw new Error(`the import did not complete: ${JSON.stringify(state)}`);
}

/**
 * Imports `n` contacts into `audienceId` of `tenant` from one CSV file, through the contact-import process, then
 * writes the same rows raw; the import's contacts stay for what the caller measures next.
 */
export async function measureContactImport(
  services: Services,
  tenant: { orgId: string; mode: Mode },
  audienceId: string,
  n: number,
  meter: ReturnType<typeof cpuMeter>,
): Promise<ContactImportBenchResult> {
  const started = performance.now();
  const cpuBefore = meter.sample();
  await importContacts(services, tenant, audienceId, n);
  const imported = performance.now();
  const cpu = meter.per(cpuBefore, meter.sample(), n);
  await services.readYourWrites.waitFor(['contacts'], await services.store.headPosition({ committed: true }));
  const readable = performance.now();
  const cpuReadable = meter.per(cpuBefore, meter.sample(), n);
  const { rows } = await services.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM contacts WHERE org_id = $1',
    [tenant.orgId],
  );
  if (rows[0].n !== n) throw new Error(`${rows[0].n} contacts readable, ${n} imported`);

  const rawSeconds = await writeCsvRowsRaw(services.db, tenant, n);
  const { seconds: sameRowsSeconds, byTable } = await writeImportedRowsRaw(services.db, tenant.orgId);
  const again = await measureReimport(services, tenant, audienceId, n, meter);

  const importSeconds = (imported - started) / 1000;
  const readableSeconds = (readable - started) / 1000;
  const rate = (s: number) => `${Math.round(n / s).toLocaleString('en')}/s`;
  const text = [
    `import: ${n.toLocaleString('en')} contacts from CSV, job completed in ${importSeconds.toFixed(2)} s (${rate(importSeconds)}; ${cpuText(cpu)} per contact), readable in ${readableSeconds.toFixed(2)} s (${rate(readableSeconds)}; ${cpuText(cpuReadable)} per contact)`,
    `raw multi-row INSERT of the CSV's rows: ${rawSeconds.toFixed(2)} s (${rate(rawSeconds)}); import / raw: ${Math.round((rawSeconds / importSeconds) * 100)}% (aim: at least 20,000 contacts/s and 50 %)`,
    `raw multi-row INSERT of the rows the import wrote (${ROWS_PER_CONTACT} a contact, into copies of their tables with their indexes, ${RAW_BATCH.toLocaleString('en')} contacts a transaction): ${sameRowsSeconds.toFixed(2)} s (${rate(sameRowsSeconds)}); import / same rows raw: ${Math.round((sameRowsSeconds / importSeconds) * 100)}%; their INSERTs by table: ${byTable}`,
    `re-import of the same addresses, each contact's plan changed: job completed in ${again.seconds.toFixed(2)} s (${rate(again.seconds)}; ${cpuText(again.cpu)} per contact); re-import / import: ${Math.round((importSeconds / again.seconds) * 100)}%`,
  ];
  return { contacts: n, importSeconds, readableSeconds, rawSeconds, sameRowsSeconds, text };
}

/**
 * The same `n` addresses imported again, each row with the other plan: every row updates its contact. Seconds until
 * the job completed and CPU per contact; the contacts' new plans are checked once readable.
 */
async function measureReimport(
  services: Services,
  tenant: { orgId: string; mode: Mode },
  audienceId: string,
  n: number,
  meter: ReturnType<typeof cpuMeter>,
) {
  const started = performance.now();
  const cpuBefore = meter.sample();
  await importContacts(services, tenant, audienceId, n, true);
  const seconds = (performance.now() - started) / 1000;
  const cpu = meter.per(cpuBefore, meter.sample(), n);
  await services.readYourWrites.waitFor(['contacts'], await services.store.headPosition({ committed: true }));
  const { rows } = await services.db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM contacts WHERE org_id = $1 AND properties->>'plan' = 'pro'",
    [tenant.orgId],
  );
  const pro = n - Math.ceil(n / 3);
  if (rows[0].n !== pro)
    throw new Error(`${rows[0].n} contacts on the pro plan after the re-import, not ${pro}`);
  return { seconds, cpu };
}

/** The CSV's rows as plain rows of a table with a primary key only, 1,000 to a statement: seconds taken. */
async function writeCsvRowsRaw(db: Database, tenant: { orgId: string; mode: Mode }, n: number) {
  await db.query(RAW_SCHEMA);
  const started = performance.now();
  const at = new Date().toISOString();
  for (let from = 0; from < n; from += RAW_BATCH) {
    const rows = Array.from({ length: Math.min(n, from + RAW_BATCH) - from }, (_, k) => {
      const i = from + k;
      const email = `person${i}@bench.example.org`;
      return {
        id: `con_raw${i}`,
        org_id: tenant.orgId,
        mode: tenant.mode,
        email,
        email_lower: email.toLowerCase(),
        first_name: `First${i}`,
        last_name: `Last, ${i}`,
        unsubscribed: false,
        properties: { plan: i % 3 === 0 ? 'pro' : 'free', city: `City ${i % 100}` },
        created_at: at,
        updated_at: at,
      };
    });
    await insertRows(db, 'raw_contacts', rows);
  }
  const seconds = (performance.now() - started) / 1000;
  await db.query('DROP TABLE raw_contacts');
  return seconds;
}

/** Contacts (or CSV rows) a raw transaction writes. */
const RAW_BATCH = 1000;

/** What an import wrote, table by table: a copy of each table (`raw_` before its name) takes the same rows. */
const WRITTEN = [
  {
    table: 'events',
    // The claims and contacts the import appended: two a contact, in log order.
    rows: `SELECT * FROM events WHERE type IN ('ContactEmailClaimed', 'ContactCreated') AND metadata->>'orgId' = $1
           ORDER BY tx_id, global_position`,
    perContact: 2,
  },
  {
    table: 'personal_data_keys',
    rows: 'SELECT k.* FROM personal_data_keys k JOIN contacts c ON c.id = k.subject WHERE c.org_id = $1',
    perContact: 1,
  },
  { table: 'contacts', rows: 'SELECT * FROM contacts WHERE org_id = $1 ORDER BY id', perContact: 1 },
  {
    table: 'contact_audiences',
    rows: 'SELECT a.* FROM contact_audiences a JOIN contacts c ON c.id = a.contact_id WHERE c.org_id = $1',
    perContact: 1,
  },
];
/** The rows an import writes for a contact: its address's claim and ContactCreated, its key, its row, its membership. */
const ROWS_PER_CONTACT = WRITTEN.reduce((sum, t) => sum + t.perContact, 0);

/**
 * Every row the import of `orgId`'s contacts wrote, read back, then written again into copies of their tables
 * (columns, primary keys and indexes, no defaults): the rows of 1,000 contacts a transaction, a multi-row INSERT a
 * table. Seconds taken by the writing, and by each table's INSERTs (what a contact's rows cost, table by table).
 */
async function writeImportedRowsRaw(db: Database, orgId: string) {
  const tables: { table: string; rows: Record<string, unknown>[]; perContact: number }[] = [];
  for (const { table, rows, perContact } of WRITTEN) {
    await db.query(
      `DROP TABLE IF EXISTS raw_${table}; CREATE TABLE raw_${table} (LIKE ${table} INCLUDING INDEXES)`,
    );
    tables.push({ table: `raw_${table}`, rows: (await db.query(rows, [orgId])).rows, perContact });
  }
  const contacts = tables.find((t) => t.table === 'raw_contacts')!.rows.length;
  for (const { table, rows, perContact } of tables)
    if (rows.length !== contacts * perContact)
      throw new Error(`${table}: ${rows.length} rows for ${contacts} contacts, not ${perContact} each`);
  const spent = new Map(tables.map(({ table }) => [table, 0]));
  const started = performance.now();
  for (let from = 0; from < contacts; from += RAW_BATCH) {
    await db.transaction(async (tx) => {
      for (const { table, rows, perContact } of tables) {
        const t = performance.now();
        await insertRows(tx, table, rows.slice(from * perContact, (from + RAW_BATCH) * perContact));
        spent.set(table, spent.get(table)! + performance.now() - t);
      }
    });
  }
  const seconds = (performance.now() - started) / 1000;
  for (const { table } of tables) await db.query(`DROP TABLE ${table}`);
  const byTable = [...spent]
    .map(([table, ms]) => `${table.replace(/^raw_/, '')} ${(ms / 1000).toFixed(2)} s`)
    .join(', ');
  return { seconds, byTable };
}

/** One multi-row INSERT of `rows` (objects keyed by column; json values as objects) into `table`. */
async function insertRows(db: Pick<Database, 'query'>, table: string, rows: Record<string, unknown>[]) {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]);
  const params: unknown[] = [];
  const values = rows.map(
    (row) =>
      `(${columns
        .map((column) => {
          const value = row[column];
          const json =
            value !== null &&
            typeof value === 'object' &&
            !(value instanceof Date) &&
            !Buffer.isBuffer(value);
          params.push(json ? JSON.stringify(value) : value);
          return `$${params.length}`;
        })
        .join(', ')})`,
  );
  await db.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values.join(', ')}`, params);
}
