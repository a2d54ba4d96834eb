import type { Readable } from 'node:stream';
import {
  type Column,
  CsvFileError,
  type CsvRecord,
  contactRow,
  csvRecords,
  headerColumns,
  headerOf,
} from '../../domain/contact-imports/contact-import.csv.ts';
import {
  type ContactImportCommand,
  type ContactImportState,
  type ContactImportStatus,
  contactImportDecider,
} from '../../domain/contact-imports/contact-import.decider.ts';
import {
  CONTACT_IMPORT_EVENT_TYPES,
  type ContactImportEvent,
  contactImportStream,
  type InvalidRow,
} from '../../domain/contact-imports/contact-import.events.ts';
import { CONTACT_LIMITS } from '../../domain/contacts/contact-fields.ts';
import { AppError, notFound } from '../../platform/errors.ts';
import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import { type EventMetadata, isOneOf } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { findAudience } from '../../read-side/audiences/audiences.queries.ts';
import { type ImportedBatch, type ImportedContact, importContacts } from '../contacts/contact.commands.ts';

type Deps = Pick<Services, 'store' | 'clock' | 'db' | 'blobs' | 'secretKey'>;

/** Rows written per batch: their appends share statements, and each batch records its progress once. */
export const IMPORT_BATCH_ROWS = 1000;
/** Batches written at once (in order of their progress). */
const PIPELINED_BATCHES = 2;

const at = (services: Pick<Services, 'clock'>) => services.clock.now().toISOString();

/**
 * Stores the file and queues its import: the audience must be the caller's, the file at most `maxBytes` (413
 * past it) with a header row naming `email` (422 otherwise). The file is written durably before the job names it.
 */
export async function startContactImport(
  services: Deps,
  meta: EventMetadata,
  input: { audienceId: string | null; file: Readable | AsyncIterable<Buffer>; maxBytes: number },
) {
  if (input.audienceId && !(await findAudience(services.db, meta, input.audienceId)))
    throw notFound('Audience', input.audienceId);
  const blobs = services.blobs;
  const now = services.clock.now().getTime();
  const blob = await blobs.writer(now);
  try {
    for await (const chunk of input.file) {
      await blob.write(chunk);
      if (blob.size > input.maxBytes)
        throw new AppError('body_too_large', `The file is larger than the limit of ${input.maxBytes} bytes.`);
    }
    if (blob.size === 0) throw new AppError('validation_error', 'The file is empty: it needs a header row.');
  } catch (error) {
    await blob.abort();
    throw error;
  }
  const blobKey = await blob.finish();
  try {
    await headerOf(blob.reader());
  } catch (error) {
    await blobs.delete(blobKey);
    throw error;
  }
  const importId = newId('imp', now);
  const result = await handleCommand(
    services.store,
    contactImportStream(importId),
    contactImportDecider,
    {
      type: 'StartContactImport',
      importId,
      orgId: meta.orgId,
      mode: meta.mode,
      audienceId: input.audienceId,
      blobKey,
      bytes: blob.size,
      at: at(services),
    },
    meta,
    { history: [] },
  );
  return { importId, position: result.position };
}

async function readImport(services: Deps, importId: string) {
  const events = await services.store.readStream(contactImportStream(importId));
  return { state: rebuildState(contactImportDecider, events), meta: events[0]?.metadata };
}

/** The job's state from its stream (a process reads it here, never by folding the stream itself). */
export async function readContactImport(services: Deps, importId: string): Promise<ContactImportState> {
  return (await readImport(services, importId)).state;
}

/** The id of the contact a row of an import creates: the same in every run, in the file's order. */
export function importedContactId(importId: string, row: number): string {
  return `con_${importId.slice(4)}${row.toString(32).padStart(7, '0')}`;
}

/**
 * Reads the rows of an import's file in order from the first data row: valid ones as contacts, the others (and
 * repeats of an address an earlier row has, the first occurrence winning) as invalid rows.
 */
export class ContactImportCursor {
  readonly importId: string;
  /** Data rows read so far. */
  row = 0;
  readonly #records: AsyncGenerator<CsvRecord>;
  readonly #seen = new Map<string, number>();
  #columns: Column[] = [];
  #width = 0;

  private constructor(importId: string, records: AsyncGenerator<CsvRecord>) {
    this.importId = importId;
    this.#records = records;
  }

  static async open(file: Readable, importId: string): Promise<ContactImportCursor> {
    const cursor = new ContactImportCursor(importId, csvRecords(file));
    const header = await cursor.#records.next();
    if (header.done) throw new CsvFileError(1, 'The file is empty: it needs a header row.');
    cursor.#columns = headerColumns(header.value);
    cursor.#width = header.value.cells.length;
    return cursor;
  }

  /** The next `limit` rows (fewer at the end of the file). */
  async take(limit: number): Promise<{ rows: number; contacts: ImportedContact[]; invalid: InvalidRow[] }> {
    const contacts: ImportedContact[] = [];
    const invalid: InvalidRow[] = [];
    let rows = 0;
    while (rows < limit) {
      const next = await this.#records.next();
      if (next.done) break;
      const read = contactRow(this.#columns, this.#width, next.value);
      const index = this.row++;
      rows++;
      if ('reason' in read) {
        invalid.push(read);
        continue;
      }
      const address = read.email.toLowerCase();
      const first = this.#seen.get(address);
      if (first !== undefined) {
        invalid.push({ line: read.line, reason: `email: repeats the address of line ${first}` });
        continue;
      }
      this.#seen.set(address, read.line);
      contacts.push({ ...read, contactId: importedContactId(this.importId, index) });
    }
    return { rows, contacts, invalid };
  }

  async close(): Promise<void> {
    await this.#records.return(undefined);
  }
}

async function countRows(file: Readable): Promise<number> {
  let n = -1; // the header
  for await (const _ of csvRecords(file)) n++;
  return Math.max(0, n);
}

type Job = ContactImportState & { exists: true };

export interface WorkOptions {
  /** Asked between batches: true stops the run there (it goes on later from what is recorded). */
  pause?: () => boolean;
  onProgress?: (state: Job) => void;
  /** A cursor left by an earlier run of this process, used when it stands where the job does. */
  cursors?: Map<string, ContactImportCursor>;
}

/**
 * Works an import from where its log says it stands: the first run reads the whole file once (a file that is
 * not CSV fails the job before any contact is written) and records the row count, then rows are written batch by
 * batch, each batch's progress recorded after its contacts. A crash in between writes the batch again: the rows'
 * contacts have fixed ids, so nothing is duplicated, and the progress is recorded once. Resolves with the state
 * it left the job in.
 */
export async function workContactImport(
  services: Deps,
  importId: string,
  o: WorkOptions = {},
): Promise<ContactImportState> {
  const read = await readImport(services, importId);
  const blobs = services.blobs;
  if (!read.state.exists) return read.state;
  if (read.state.status === 'completed' || read.state.status === 'failed') {
    // A run that stopped between the end and the delete: the file goes now.
    await blobs.delete(read.state.blobKey);
    return read.state;
  }
  let state: Job = read.state;
  // Everything an import writes is caused by whoever started it.
  const meta: EventMetadata = { orgId: state.orgId, mode: state.mode, actor: read.meta!.actor };
  const decide = async (command: ContactImportCommand) => {
    const result = await handleCommand(
      services.store,
      contactImportStream(importId),
      contactImportDecider,
      command,
      meta,
    );
    return result.state as Job;
  };
  // A finished import's file is deleted: the contacts hold what it brought, and the address of a contact deleted
  // later stays nowhere else.
  const finish = async (command: Extract<ContactImportCommand, { type: 'FinishContactImport' }>) => {
    const finished = await decide(command);
    await blobs.delete(finished.blobKey);
    return finished;
  };
  const fail = (error: CsvFileError) =>
    finish({
      type: 'FinishContactImport',
      importId,
      status: 'failed',
      error: { line: error.line, message: error.message },
      at: at(services),
    });
  // The batches a run that finds the job running may have to write again: it may follow one that stopped with
  // PIPELINED_BATCHES in flight.
  let mayExist = state.status === 'running' ? PIPELINED_BATCHES : 0;
  try {
    if (state.status === 'queued') {
      const rowsTotal = await countRows(blobs.stream(state.blobKey));
      state = await decide({ type: 'CountContactImport', importId, rowsTotal, at: at(services) });
    }
    let cursor = o.cursors?.get(importId);
    o.cursors?.delete(importId);
    if (cursor && cursor.row === state.processed) mayExist = 0; // left between batches by this process
    if (!cursor || cursor.row !== state.processed) {
      await cursor?.close();
      cursor = await ContactImportCursor.open(blobs.stream(state.blobKey), importId);
      // Rows written already are read again for the addresses they hold (a later repeat is still one).
      while (cursor.row < state.processed)
        await cursor.take(Math.min(IMPORT_BATCH_ROWS, state.processed - cursor.row));
    }
    const total = state.rowsTotal ?? 0;
    const inFlight: {
      fromRow: number;
      rows: number;
      invalid: InvalidRow[];
      writing: Promise<ImportedBatch>;
    }[] = [];
    let paused = false;
    for (;;) {
      // The next batch is written while the one before it finishes: their appends share statements.
      while (!paused && inFlight.length < PIPELINED_BATCHES && cursor.row < total) {
        const fromRow = cursor.row;
        const batch = await cursor.take(IMPORT_BATCH_ROWS);
        if (batch.rows === 0) throw new Error(`import ${importId}: the file ended before its counted rows`);
        const writing = importContacts(services, meta, batch.contacts, {
          audienceId: state.audienceId,
          maxProperties: CONTACT_LIMITS.properties,
          mayExist: mayExist-- > 0,
        });
        writing.catch(() => {}); // awaited in turn below
        inFlight.push({ fromRow, rows: batch.rows, invalid: batch.invalid, writing });
      }
      const next = inFlight.shift();
      if (!next) break;
      const written = await next.writing;
      const invalidRows = [...next.invalid, ...written.skipped].sort((a, b) => a.line - b.line);
      state = await decide({
        type: 'RecordContactImportProgress',
        importId,
        fromRow: next.fromRow,
        rows: next.rows,
        created: written.created,
        updated: written.updated,
        skipped: invalidRows.length,
        invalidRows,
        at: at(services),
      });
      // Another run recorded this batch first: this one stops once its writes are done, that one goes on.
      if (state.status !== 'running' || state.processed !== next.fromRow + next.rows) {
        await Promise.allSettled(inFlight.map((b) => b.writing));
        await cursor.close();
        return state;
      }
      o.onProgress?.(state);
      paused ||= o.pause?.() ?? false;
    }
    if (paused && state.processed < total) {
      o.cursors?.set(importId, cursor);
      return state;
    }
    await cursor.close();
    if (state.status === 'running' && state.processed === state.rowsTotal)
      state = await finish({
        type: 'FinishContactImport',
        importId,
        status: 'completed',
        error: null,
        at: at(services),
      });
    return state;
  } catch (error) {
    if (error instanceof CsvFileError) return fail(error);
    // Another run finished the job and deleted its file meanwhile: the job is as that run left it.
    if ((error as { code?: string })?.code === 'ENOENT') {
      const now = await readContactImport(services, importId);
      if (now.exists && (now.status === 'completed' || now.status === 'failed')) return now;
    }
    throw error;
  }
}

/** What an import did, from its log: counts, the rows it lists as skipped, and why it failed. */
export async function contactImportReport(services: Deps, importId: string) {
  const report = {
    status: 'queued' as ContactImportStatus,
    rowsTotal: null as number | null,
    created: 0,
    updated: 0,
    skipped: 0,
    invalidRows: [] as InvalidRow[],
    error: null as { line: number | null; message: string } | null,
  };
  for (const event of await services.store.readStream(contactImportStream(importId))) {
    if (!isOneOf<ContactImportEvent>(event, CONTACT_IMPORT_EVENT_TYPES)) continue;
    switch (event.type) {
      case 'ContactImportCounted':
        report.status = 'running';
        report.rowsTotal = event.data.rowsTotal;
        break;
      case 'ContactImportProgressed':
        report.created += event.data.created;
        report.updated += event.data.updated;
        report.skipped += event.data.skipped;
        report.invalidRows.push(...event.data.invalidRows);
        break;
      case 'ContactImportFinished':
        report.status = event.data.status;
        report.error = event.data.error;
    }
  }
  return report;
}
