/**
 * Contact import throughput: N contacts imported from a CSV file through the real code path (the file stored as
 * `POST /v1/audiences/{id}/contacts/import` stores it, then worked by the contact-import process: claims, sealed
 * personal data, ContactCreated events, progress), beside a raw baseline measured in the same run: the same rows
 * written with multi-row INSERTs of 1,000 into a plain table in the same database.
 *
 * Two figures for Postline: the job `completed` (every event committed), and the contacts readable (the
 * `contacts` projection caught up). Part of `npm run bench:broadcast`.
 */
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
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
  /** Seconds for the raw multi-row INSERTs of the same rows. */
  rawSeconds: number;
  /** The report's lines. */
  text: string[];
}

const HEADER = 'email,first_name,last_name,plan,city';
const row = (i: number) =>
  `person${i}@bench.example.org,First${i},"Last, ${i}",${i % 3 === 0 ? 'pro' : 'free'},City ${i % 100}`;

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
): Promise<void> {
  const csv = Buffer.from([HEADER, ...Array.from({ length: n }, (_, i) => row(i))].join('\n'));
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
  const org = tenant;
  {
    const started = performance.now();
    const cpuBefore = meter.sample();
    await importContacts(services, tenant, audienceId, n);
    const imported = performance.now();
    const cpu = meter.per(cpuBefore, meter.sample(), n);
    await services.readYourWrites.waitFor(
      ['contacts'],
      await services.store.headPosition({ committed: true }),
    );
    const readable = performance.now();
    const cpuReadable = meter.per(cpuBefore, meter.sample(), n);
    const { rows } = await services.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE org_id = $1',
      [org.orgId],
    );
    if (rows[0].n !== n) throw new Error(`${rows[0].n} contacts readable, ${n} imported`);

    // The baseline: the same rows, as plain rows, 1,000 to a statement.
    await services.db.query(RAW_SCHEMA);
    const rawStarted = performance.now();
    const at = new Date().toISOString();
    for (let from = 0; from < n; from += 1000) {
      const params: unknown[] = [];
      const values: string[] = [];
      for (let i = from; i < Math.min(n, from + 1000); i++) {
        const email = `person${i}@bench.example.org`;
        const p = params.length;
        values.push(
          `($${p + 1}, $${p + 2}, $${p + 9}, $${p + 3}, $${p + 4}, $${p + 5}, $${p + 6}, false, $${p + 7}, $${p + 8}, $${p + 8})`,
        );
        params.push(
          `con_raw${i}`,
          org.orgId,
          email,
          email.toLowerCase(),
          `First${i}`,
          `Last, ${i}`,
          JSON.stringify({ plan: i % 3 === 0 ? 'pro' : 'free', city: `City ${i % 100}` }),
          at,
          tenant.mode,
        );
      }
      await services.db.query(
        `INSERT INTO raw_contacts (id, org_id, mode, email, email_lower, first_name, last_name, unsubscribed, properties,
           created_at, updated_at)
         VALUES ${values.join(', ')}`,
        params,
      );
    }
    const rawDone = performance.now();
    await services.db.query('DROP TABLE raw_contacts');

    const importSeconds = (imported - started) / 1000;
    const readableSeconds = (readable - started) / 1000;
    const rawSeconds = (rawDone - rawStarted) / 1000;
    const rate = (s: number) => `${Math.round(n / s).toLocaleString('en')}/s`;
    const text = [
      `import: ${n.toLocaleString('en')} contacts from CSV, job completed in ${importSeconds.toFixed(2)} s (${rate(importSeconds)}; ${cpuText(cpu)} per contact), readable in ${readableSeconds.toFixed(2)} s (${rate(readableSeconds)}; ${cpuText(cpuReadable)} per contact)`,
      `raw multi-row INSERT of the same rows: ${rawSeconds.toFixed(2)} s (${rate(rawSeconds)}); import / raw: ${Math.round((rawSeconds / importSeconds) * 100)}% (aim: at least 20,000 contacts/s)`,
    ];
    return { contacts: n, importSeconds, readableSeconds, rawSeconds, text };
  }
}
