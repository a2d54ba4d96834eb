import { audienceDecider } from '../../domain/audiences/audience.decider.ts';
import { audienceStream } from '../../domain/audiences/audience.events.ts';
import { CsvFileError } from '../../domain/contact-imports/contact-import.csv.ts';
import type {
  ContactImportCommand,
  ContactImportState,
} from '../../domain/contact-imports/contact-import.decider.ts';
import type { InvalidRow } from '../../domain/contact-imports/contact-import.events.ts';
import { CONTACT_LIMITS } from '../../domain/contacts/contact-fields.ts';
import type { BlobStore } from '../../platform/blob-store.ts';
import { rebuildState } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { analyzeContacts } from '../../read-side/contacts/contacts.queries.ts';
import {
  onImport,
  readContactImport,
  readImport,
} from '../../write-side/contact-imports/contact-import.commands.ts';
import { ContactImportCursor, countRows } from './contact-import-cursor.ts';
import { type ImportedBatch, importContacts } from './import-contacts.ts';

type Deps = Pick<Services, 'store' | 'clock' | 'db' | 'config' | 'lookUps' | 'blobs'>;
type Job = ContactImportState & { exists: true };

/** Rows written per batch: their appends share statements, and each batch records its progress once. */
export const IMPORT_BATCH_ROWS = 1000;

/** An import of at least this many rows has the contacts' tables analyzed once it is done (analyzeContacts). */
export const ANALYZE_AFTER_ROWS = 1000;

/** Batches written at once (in order of their progress). */
const PIPELINED_BATCHES = 2;

/** Why an import whose audience was deleted while it ran stopped (docs/contacts.md). */
export const AUDIENCE_DELETED =
  'The audience was deleted during the import: the rows written before stay as contacts (without the audience), the others were not imported.';

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
  if (!read.state.exists) return read.state;
  if (read.state.status === 'completed' || read.state.status === 'failed') {
    // A run that stopped between the end and the delete: the file goes now.
    await services.blobs.delete(read.state.blobKey);
    return read.state;
  }
  // Everything an import writes is caused by whoever started it.
  const meta: EventMetadata = { orgId: read.state.orgId, mode: read.state.mode, actor: read.meta!.actor };
  return new ImportRun(services, importId, read.state, meta, o).run();
}

interface Batch {
  fromRow: number;
  rows: number;
  invalid: InvalidRow[];
  writing: Promise<ImportedBatch>;
}

class ImportRun {
  readonly services: Deps;
  readonly importId: string;
  readonly meta: EventMetadata;
  readonly o: WorkOptions;
  readonly blobs: BlobStore;
  #state: Job;
  /** The batches a run that finds the job running may have to write again: it may follow one that stopped with
   * PIPELINED_BATCHES in flight. */
  #mayExist: number;

  constructor(services: Deps, importId: string, state: Job, meta: EventMetadata, o: WorkOptions) {
    this.services = services;
    this.importId = importId;
    this.meta = meta;
    this.o = o;
    this.blobs = services.blobs;
    this.#state = state;
    this.#mayExist = state.status === 'running' ? PIPELINED_BATCHES : 0;
  }

  async run(): Promise<ContactImportState> {
    try {
      await this.#countIfNew();
      const cursor = await this.#openCursor();
      const outcome = await this.#writeBatches(cursor);
      if (outcome === 'paused' && this.#state.processed < (this.#state.rowsTotal ?? 0)) {
        this.o.cursors?.set(this.importId, cursor);
        return this.#state;
      }
      await cursor.close();
      if (outcome === 'audience deleted') return await this.#fail({ line: null, message: AUDIENCE_DELETED });
      if (outcome !== 'overtaken') await this.#completeIfDone();
      return this.#state;
    } catch (error) {
      if (error instanceof CsvFileError) return this.#fail({ line: error.line, message: error.message });
      // Another run finished the job and deleted its file meanwhile: the job is as that run left it.
      if ((error as { code?: string })?.code === 'ENOENT') {
        const now = await readContactImport(this.services, this.importId);
        if (now.exists && (now.status === 'completed' || now.status === 'failed')) return now;
      }
      throw error;
    }
  }

  /** A queued job's file is read once through and its rows counted, before any contact is written. */
  async #countIfNew() {
    if (this.#state.status !== 'queued') return;
    const rowsTotal = await countRows(this.blobs.stream(this.#state.blobKey));
    await this.#decide({ type: 'CountContactImport', importId: this.importId, rowsTotal, at: this.#now() });
  }

  /** The cursor this process left where the job stands, or the file read again up to there. */
  async #openCursor(): Promise<ContactImportCursor> {
    const processed = this.#state.processed;
    let cursor = this.o.cursors?.get(this.importId);
    this.o.cursors?.delete(this.importId);
    if (cursor && cursor.row === processed) this.#mayExist = 0; // left between batches by this process
    if (cursor && cursor.row === processed) return cursor;
    await cursor?.close();
    cursor = await ContactImportCursor.open(this.blobs.stream(this.#state.blobKey), this.importId);
    // Rows written already are read again for the addresses they hold (a later repeat is still one).
    while (cursor.row < processed) await cursor.take(Math.min(IMPORT_BATCH_ROWS, processed - cursor.row));
    return cursor;
  }

  /**
   * Batch after batch, the next one written while the one before it finishes (their appends share statements),
   * each one's progress recorded in turn. `overtaken`: another run recorded a batch first, and goes on.
   * `audience deleted`: found before a batch was started; the batches in flight are recorded, no other is written
   * (a membership they write after the deletion is not shown: projections/contacts.projection.ts).
   */
  async #writeBatches(
    cursor: ContactImportCursor,
  ): Promise<'read' | 'paused' | 'overtaken' | 'audience deleted'> {
    const total = this.#state.rowsTotal ?? 0;
    const inFlight: Batch[] = [];
    let paused = false;
    let gone = false;
    for (;;) {
      while (!paused && !gone && inFlight.length < PIPELINED_BATCHES && cursor.row < total) {
        gone = await this.#audienceDeleted();
        if (!gone) inFlight.push(await this.#writeBatch(cursor));
      }
      const next = inFlight.shift();
      if (!next) return gone ? 'audience deleted' : paused ? 'paused' : 'read';
      await this.#recordProgress(next);
      // Another run recorded this batch first: this one stops once its writes are done, that one goes on.
      if (this.#state.status !== 'running' || this.#state.processed !== next.fromRow + next.rows) {
        await Promise.allSettled(inFlight.map((b) => b.writing));
        return 'overtaken';
      }
      this.o.onProgress?.(this.#state);
      paused ||= this.o.pause?.() ?? false;
    }
  }

  /** Whether the job's audience is deleted: its stream read once a batch, as the log has it (no read model). */
  async #audienceDeleted(): Promise<boolean> {
    const audienceId = this.#state.audienceId;
    if (!audienceId) return false;
    const history = await this.services.store.readStream(audienceStream(audienceId));
    const audience = rebuildState(audienceDecider, history);
    return !audience.exists || audience.deleted;
  }

  /** The next rows of the file, their contacts' writes started. */
  async #writeBatch(cursor: ContactImportCursor): Promise<Batch> {
    const fromRow = cursor.row;
    const batch = await cursor.take(IMPORT_BATCH_ROWS);
    if (batch.rows === 0) throw new Error(`import ${this.importId}: the file ended before its counted rows`);
    const writing = importContacts(this.services, this.meta, batch.contacts, {
      audienceId: this.#state.audienceId,
      maxProperties: CONTACT_LIMITS.properties,
      mayExist: this.#mayExist-- > 0,
    });
    writing.catch(() => {}); // awaited in turn by #recordProgress
    return { fromRow, rows: batch.rows, invalid: batch.invalid, writing };
  }

  async #recordProgress(batch: Batch) {
    const written = await batch.writing;
    const invalidRows = [...batch.invalid, ...written.skipped].sort((a, b) => a.line - b.line);
    await this.#decide({
      type: 'RecordContactImportProgress',
      importId: this.importId,
      fromRow: batch.fromRow,
      rows: batch.rows,
      created: written.created,
      updated: written.updated,
      skipped: invalidRows.length,
      invalidRows,
      at: this.#now(),
    });
  }

  async #completeIfDone() {
    if (this.#state.status !== 'running' || this.#state.processed !== this.#state.rowsTotal) return;
    await this.#finish({
      type: 'FinishContactImport',
      importId: this.importId,
      status: 'completed',
      error: null,
      at: this.#now(),
    });
    if (this.#state.rowsTotal >= ANALYZE_AFTER_ROWS) await analyzeContacts(this.services.db);
  }

  #fail(error: { line: number | null; message: string }) {
    return this.#finish({
      type: 'FinishContactImport',
      importId: this.importId,
      status: 'failed',
      error,
      at: this.#now(),
    });
  }

  /**
   * A finished import's file is deleted: the contacts hold what it brought, and the address of a contact deleted
   * later stays nowhere else.
   */
  async #finish(command: Extract<ContactImportCommand, { type: 'FinishContactImport' }>) {
    const finished = await this.#decide(command);
    await this.blobs.delete(finished.blobKey);
    return finished;
  }

  async #decide(command: ContactImportCommand): Promise<Job> {
    this.#state = (await onImport(this.services, this.meta, command)).state as Job;
    return this.#state;
  }

  #now = () => this.services.clock.now().toISOString();
}
