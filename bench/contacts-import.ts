/**
 * Contact import throughput: N contacts imported from a CSV file through the real code path (the file stored as
 * `POST /v1/audiences/{id}/contacts/import` stores it, then worked by the contact-import process: claims, sealed
 * personal data, ContactCreated events, progress), beside a raw baseline measured in the same run: the same rows
 * written with multi-row INSERTs of 1,000 into a plain table in the same database.
 *
 * Two figures for Postline: the job `completed` (every event committed), and the contacts readable (the
 * `contacts` projection caught up). `bench/broadcast.bench.ts` calls `measureContactImport`; run alone it is
 * `node bench/contacts-import.ts [N]` (default 20,000).
 */
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { ContactImportProcess } from '../processes/contact-import/contact-import.process.ts';
import { startTestService } from '../test/support/service.ts';
import {
  readContactImport,
  startContactImport,
} from '../write-side/contact-imports/contact-import.commands.ts';

export interface ContactImportBenchResult {
  contacts: number;
  /** Seconds until the job completed (the file stored, every row's events committed). */
  importSeconds: number;
  /** Seconds until the contacts were readable through the API's read model. */
  readableSeconds: number;
  /** Seconds for the raw multi-row INSERTs of the same rows. */
  rawSeconds: number;
  /** The report's lines. */
  text: string;
}

const HEADER = 'email,first_name,last_name,plan,city';
const row = (i: number) =>
  `person${i}@bench.example.org,First${i},"Last, ${i}",${i % 3 === 0 ? 'pro' : 'free'},City ${i % 100}`;

const RAW_SCHEMA = `
DROP TABLE IF EXISTS raw_contacts;
CREATE TABLE raw_contacts (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  email text NOT NULL,
  email_lower text NOT NULL,
  first_name text,
  last_name text,
  properties jsonb NOT NULL,
  created_at timestamptz NOT NULL
)`;

export async function measureContactImport(o: { contacts: number }): Promise<ContactImportBenchResult> {
  const n = o.contacts;
  const svc = await startTestService({
    env: { PROJECTION_WAIT_MS: '600000', CONTACT_IMPORT_MAX_BYTES: String(1024 * 1024 * 1024) },
  });
  try {
    const { services } = svc.postline;
    const org = await svc.createOrg('business');
    const audience = (await org.live.post('/v1/audiences', { name: 'Bench' })).body.id as string;
    const csv = Buffer.from([HEADER, ...Array.from({ length: n }, (_, i) => row(i))].join('\n'));
    const worker = new ContactImportProcess(services);

    const started = performance.now();
    const { importId } = await startContactImport(
      services,
      { orgId: org.orgId, mode: 'live', actor: 'bench' },
      { audienceId: audience, file: Readable.from([csv]), maxBytes: csv.length },
    );
    await worker.runOnce();
    const imported = performance.now();
    const state = await readContactImport(services, importId);
    if (!state.exists || state.status !== 'completed' || state.processed !== n)
      throw new Error(`the import did not complete: ${JSON.stringify(state)}`);
    await services.readYourWrites.waitFor(
      ['contacts'],
      await services.store.headPosition({ committed: true }),
    );
    const readable = performance.now();
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
          `($${p + 1}, $${p + 2}, 'live', $${p + 3}, $${p + 4}, $${p + 5}, $${p + 6}, $${p + 7}, $${p + 8})`,
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
        );
      }
      await services.db.query(
        `INSERT INTO raw_contacts (id, org_id, mode, email, email_lower, first_name, last_name, properties, created_at)
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
      `contact import, ${n.toLocaleString('en')} contacts (PostgreSQL):`,
      `  job completed         ${importSeconds.toFixed(2)} s  ${rate(importSeconds)}`,
      `  contacts readable     ${readableSeconds.toFixed(2)} s  ${rate(readableSeconds)}`,
      `  raw multi-row INSERT  ${rawSeconds.toFixed(2)} s  ${rate(rawSeconds)} (baseline)`,
    ].join('\n');
    return { contacts: n, importSeconds, readableSeconds, rawSeconds, text };
  } finally {
    await svc.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = await measureContactImport({ contacts: Number(process.argv[2] ?? 20_000) });
  process.stdout.write(`${result.text}\n`);
}
