import { describe, it } from 'vitest';
import {
  contactImportDecider,
  INVALID_ROWS_LISTED,
} from '../../domain/contact-imports/contact-import.decider.ts';
import type { ContactImportEvent } from '../../domain/contact-imports/contact-import.events.ts';
import { spec } from '../support/given-when-then.ts';

const importId = 'imp_1';
const started: ContactImportEvent = {
  type: 'ContactImportStarted',
  data: {
    importId,
    orgId: 'org_1',
    mode: 'live',
    audienceId: 'aud_1',
    blobKey: 'blob_1',
    bytes: 120,
    startedAt: 'T1',
  },
};
const counted: ContactImportEvent = {
  type: 'ContactImportCounted',
  data: { importId, rowsTotal: 3, countedAt: 'T2' },
};
type Batch = Omit<
  Extract<ContactImportEvent, { type: 'ContactImportProgressed' }>['data'],
  'importId' | 'progressedAt'
>;
const progressed = (batch: Batch, progressedAt: string): ContactImportEvent => ({
  type: 'ContactImportProgressed',
  data: { importId, ...batch, progressedAt },
});
const firstRows: Batch = {
  fromRow: 0,
  rows: 2,
  created: 1,
  updated: 0,
  skipped: 1,
  invalidRows: [{ line: 3, reason: 'email: must be a valid email address' }],
};
const lastRows: Batch = { fromRow: 2, rows: 1, created: 1, updated: 0, skipped: 0, invalidRows: [] };
const firstBatch = progressed(firstRows, 'T3');
const progress = (fromRow: number, rows: number, invalidRows = [] as { line: number; reason: string }[]) => ({
  type: 'RecordContactImportProgress' as const,
  importId,
  fromRow,
  rows,
  created: rows - invalidRows.length,
  updated: 0,
  skipped: invalidRows.length,
  invalidRows,
  at: 'T4',
});

describe('contact import decider', () => {
  it('starts an import, once', () => {
    const { type: _, data } = started;
    const { startedAt: __, ...fields } = data as Extract<
      ContactImportEvent,
      { type: 'ContactImportStarted' }
    >['data'];
    const start = { type: 'StartContactImport' as const, ...fields, at: 'T1' };
    spec(contactImportDecider).given([]).when(start).then([started]);
    spec(contactImportDecider).given([started]).when(start).then([]);
  });

  it('counts the rows once: the import runs from then on', () => {
    const count = { type: 'CountContactImport' as const, importId, rowsTotal: 3, at: 'T2' };
    spec(contactImportDecider).given([started]).when(count).then([counted]);
    spec(contactImportDecider).given([started, counted]).when(count).then([]);
    // Nothing is counted for a job that does not exist.
    spec(contactImportDecider).given([]).when(count).then([]);
  });

  it('records a batch that follows what is recorded, and no other (a resumed run writes it again)', () => {
    spec(contactImportDecider)
      .given([started, counted])
      .when(progress(0, 2, [{ line: 3, reason: 'email: must be a valid email address' }]))
      .then([progressed(firstRows, 'T4')]);
    spec(contactImportDecider).given([started, counted, firstBatch]).when(progress(0, 2)).then([]);
    spec(contactImportDecider).given([started, counted, firstBatch]).when(progress(3, 1)).then([]);
    spec(contactImportDecider)
      .given([started, counted, firstBatch])
      .when(progress(2, 1))
      .then([progressed(lastRows, 'T4')]);
    // Before it was counted, nothing is recorded.
    spec(contactImportDecider).given([started]).when(progress(0, 2)).then([]);
  });

  it(`lists at most ${INVALID_ROWS_LISTED} invalid rows; the skipped count goes on`, () => {
    const many = Array.from({ length: INVALID_ROWS_LISTED - 1 }, (_, i) => ({ line: i + 2, reason: 'r' }));
    const big: ContactImportEvent = {
      type: 'ContactImportCounted',
      data: { importId, rowsTotal: 5000, countedAt: 'T2' },
    };
    const almostFull = progressed(
      { fromRow: 0, rows: many.length, created: 0, updated: 0, skipped: many.length, invalidRows: many },
      'T3',
    );
    const next = [
      { line: 2000, reason: 'a' },
      { line: 2001, reason: 'b' },
    ];
    spec(contactImportDecider)
      .given([started, big, almostFull])
      .when(progress(many.length, 2, next))
      .then([
        progressed(
          {
            fromRow: many.length,
            rows: 2,
            created: 0,
            updated: 0,
            skipped: 2,
            invalidRows: [{ line: 2000, reason: 'a' }],
          },
          'T4',
        ),
      ]);
  });

  it('completes once every row is recorded; fails at any point; a finished job takes nothing more', () => {
    const complete = {
      type: 'FinishContactImport' as const,
      importId,
      status: 'completed' as const,
      error: null,
      at: 'T5',
    };
    const finished = (
      status: 'completed' | 'failed',
      error: { line: number; message: string } | null,
    ): ContactImportEvent => ({
      type: 'ContactImportFinished',
      data: { importId, status, error, finishedAt: 'T5' },
    });
    const rest = progressed(lastRows, 'T3');
    const completed = finished('completed', null);
    spec(contactImportDecider).given([started, counted, firstBatch, rest]).when(complete).then([completed]);
    spec(contactImportDecider).given([started, counted, firstBatch]).when(complete).thenFails('conflict');
    const fail = {
      ...complete,
      status: 'failed' as const,
      error: { line: 7, message: 'Quote not closed' },
    };
    spec(contactImportDecider)
      .given([started])
      .when(fail)
      .then([finished('failed', { line: 7, message: 'Quote not closed' })]);
    const done = [started, counted, firstBatch, rest, completed];
    spec(contactImportDecider).given(done).when(fail).then([]);
    spec(contactImportDecider).given(done).when(complete).then([]);
    spec(contactImportDecider).given(done).when(progress(3, 1)).then([]);
  });
});
