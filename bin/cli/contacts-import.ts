import { open } from 'node:fs/promises';
import { resolve } from 'node:path';
import { AppError } from '../../platform/errors.ts';
import { workContactImport } from '../../processes/contact-import/contact-import-run.ts';
import {
  contactImportReport,
  startContactImport,
} from '../../write-side/contact-imports/contact-import.commands.ts';
import type { ArgumentsOf } from './arguments.ts';
import type { Cli } from './cli.ts';
import { progressBar } from './progress.ts';

/** Imports contacts from a CSV file, working the import here through the code the service runs. */
export async function contactsImport(
  { services, out, write, knownOrganization }: Cli,
  { file, org, mode, audience }: ArgumentsOf<'contacts import'>,
): Promise<number> {
  if (!(await knownOrganization(org))) return 1;
  const meta = { orgId: org, mode, actor: 'cli' } as const;
  let importId: string;
  try {
    // Opened first: a file that cannot be read is an answer here, not an error event on a stream.
    const handle = await open(resolve(file));
    ({ importId } = await startContactImport(services, meta, {
      audienceId: audience ?? null,
      file: handle.createReadStream(),
      maxBytes: services.config.CONTACT_IMPORT_MAX_BYTES,
    }).finally(() => handle.close()));
  } catch (error: any) {
    if (error instanceof AppError) write(`${file}: ${error.message}`);
    else if (error?.code === 'ENOENT' || error?.code === 'EACCES' || error?.code === 'EISDIR')
      write(`${file}: cannot be read (${error.code}).`);
    else throw error;
    return 1;
  }
  // The import is worked here, through the code the service's process runs (a running service may share it).
  const bar = progressBar(out, 'import', 'rows');
  const onProgress = (s: { processed: number; rowsTotal: number | null }) =>
    bar(s.processed, s.rowsTotal ?? 0);
  let state = await workContactImport(services, importId, { onProgress });
  // A running service took part of the work: this run goes on from where the log stands until the job ends.
  while (state.exists && (state.status === 'queued' || state.status === 'running')) {
    await new Promise((r) => setTimeout(r, 200));
    state = await workContactImport(services, importId, { onProgress });
  }
  if (state.exists && state.status === 'completed') onProgress(state);
  const report = await contactImportReport(services, importId);
  if (report.status === 'failed') {
    write(`${file}: ${report.error?.line ? `line ${report.error.line}: ` : ''}${report.error?.message}`);
    return 1;
  }
  write(
    `Imported ${file} (${importId}): ${report.rowsTotal} rows, ${report.created} created, ${report.updated} updated, ${report.skipped} skipped.`,
  );
  for (const row of report.invalidRows) write(`  line ${row.line}: ${row.reason}`);
  if (report.skipped > report.invalidRows.length)
    write(`  … and ${report.skipped - report.invalidRows.length} more skipped rows, not listed.`);
  return 0;
}
