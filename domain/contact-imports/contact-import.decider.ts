import { AppError } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { DataOf } from '../../platform/eventstore/types.ts';
import type { ContactImportEvent } from './contact-import.events.ts';

/** How many invalid rows a job lists; the count of skipped rows goes on past it. */
export const INVALID_ROWS_LISTED = 1000;

type Data<T extends ContactImportEvent['type']> = DataOf<ContactImportEvent, T>;

export type ContactImportCommand =
  | ({ type: 'StartContactImport'; at: string } & Omit<Data<'ContactImportStarted'>, 'startedAt'>)
  | ({ type: 'CountContactImport'; at: string } & Omit<Data<'ContactImportCounted'>, 'countedAt'>)
  | ({ type: 'RecordContactImportProgress'; at: string } & Omit<
      Data<'ContactImportProgressed'>,
      'progressedAt'
    >)
  | ({ type: 'FinishContactImport'; at: string } & Omit<Data<'ContactImportFinished'>, 'finishedAt'>);

export type ContactImportStatus = 'queued' | 'running' | 'completed' | 'failed';

export type ContactImportState =
  | { exists: false }
  | ({ exists: true } & Omit<Data<'ContactImportStarted'>, 'importId' | 'bytes'> & {
        status: ContactImportStatus;
        rowsTotal: number | null;
        /** Data rows written so far, from the first: where a resumed run goes on. */
        processed: number;
        listed: number;
      });

/**
 * A contact import job. Progress is recorded batch by batch, each naming the row it starts from: a batch
 * recorded already (a run resumed after a crash, or two runs of one job) appends nothing, so counts never
 * double. Every decision on a finished job appends nothing.
 */
export const contactImportDecider: Decider<ContactImportCommand, ContactImportEvent, ContactImportState> = {
  initialState: { exists: false },
  evolve(state, event) {
    if (event.type === 'ContactImportStarted') {
      const { importId: _, bytes: __, ...job } = event.data;
      return { exists: true, ...job, status: 'queued', rowsTotal: null, processed: 0, listed: 0 };
    }
    if (!state.exists) return state;
    switch (event.type) {
      case 'ContactImportCounted':
        return { ...state, status: 'running', rowsTotal: event.data.rowsTotal };
      case 'ContactImportProgressed':
        return {
          ...state,
          processed: event.data.fromRow + event.data.rows,
          listed: state.listed + event.data.invalidRows.length,
        };
      case 'ContactImportFinished':
        return { ...state, status: event.data.status };
    }
  },
  decide(command, state) {
    const { importId, at } = command;
    if (command.type === 'StartContactImport') {
      if (state.exists) return [];
      const { type: _, at: __, ...data } = command;
      return [{ type: 'ContactImportStarted', data: { ...data, startedAt: at } }];
    }
    if (!state.exists || state.status === 'completed' || state.status === 'failed') return [];
    switch (command.type) {
      case 'CountContactImport':
        if (state.status !== 'queued') return [];
        return [
          { type: 'ContactImportCounted', data: { importId, rowsTotal: command.rowsTotal, countedAt: at } },
        ];
      case 'RecordContactImportProgress': {
        // Only the batch that follows what is recorded: another one was recorded already.
        if (state.status !== 'running' || command.fromRow !== state.processed || command.rows === 0)
          return [];
        const { fromRow, rows, created, updated, skipped } = command;
        const room = Math.max(0, INVALID_ROWS_LISTED - state.listed);
        return [
          {
            type: 'ContactImportProgressed',
            data: {
              importId,
              fromRow,
              rows,
              created,
              updated,
              skipped,
              invalidRows: command.invalidRows.slice(0, room),
              progressedAt: at,
            },
          },
        ];
      }
      case 'FinishContactImport':
        // Completed only once every counted row is recorded; failing is possible at any point.
        if (command.status === 'completed' && state.processed !== state.rowsTotal)
          throw new AppError('conflict', 'The import has rows left to write.');
        return [
          {
            type: 'ContactImportFinished',
            data: { importId, status: command.status, error: command.error, finishedAt: at },
          },
        ];
    }
  },
};
