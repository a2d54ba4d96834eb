import type { Mode } from '../../platform/eventstore/types.ts';

/** A row of the file that was skipped: its line (1 is the header) and why, never what it held. */
export interface InvalidRow {
  line: number;
  reason: string;
}

export type ContactImportEvent =
  | {
      /** The file is stored (`blobKey`) and the import queued. */
      type: 'ContactImportStarted';
      data: {
        importId: string;
        orgId: string;
        mode: Mode;
        audienceId: string | null;
        blobKey: string;
        bytes: number;
        startedAt: string;
      };
    }
  | {
      /** The whole file was read once and is well-formed: `rowsTotal` data rows (blank rows left out); running. */
      type: 'ContactImportCounted';
      data: { importId: string; rowsTotal: number; countedAt: string };
    }
  | {
      /** The rows `fromRow` to `fromRow + rows - 1` (0-based data rows) are written. */
      type: 'ContactImportProgressed';
      data: {
        importId: string;
        fromRow: number;
        rows: number;
        created: number;
        updated: number;
        skipped: number;
        /** The skipped rows of this batch, as far as the job's list has room (`INVALID_ROWS_LISTED`). */
        invalidRows: InvalidRow[];
        progressedAt: string;
      };
    }
  | {
      type: 'ContactImportFinished';
      data: {
        importId: string;
        status: 'completed' | 'failed';
        /** Why a failed import stopped (a file that is not CSV, from `line` on); null when completed. */
        error: { line: number | null; message: string } | null;
        finishedAt: string;
      };
    };

export const CONTACT_IMPORT_EVENT_TYPES = [
  'ContactImportStarted',
  'ContactImportCounted',
  'ContactImportProgressed',
  'ContactImportFinished',
] as const satisfies readonly ContactImportEvent['type'][];

export const contactImportStream = (importId: string) => `contactimport-${importId}`;
