import type { ContactImportEvent } from '../domain/contact-imports/contact-import.events.ts';
import type { Projection } from './projection.ts';
import { insertRow, updateRow } from './rows.ts';

/** Contact import jobs: status, counts and the invalid rows they list. */
export const contactImportsProjection: Projection<ContactImportEvent> = {
  name: 'contact_imports',
  tables: ['contact_imports', 'contact_import_invalid_rows'],
  types: ['ContactImportStarted', 'ContactImportCounted', 'ContactImportProgressed', 'ContactImportFinished'],
  async apply(tx, e) {
    switch (e.type) {
      case 'ContactImportStarted': {
        const d = e.data;
        return insertRow(tx, 'contact_imports', {
          id: d.importId,
          org_id: d.orgId,
          mode: d.mode,
          audience_id: d.audienceId,
          status: 'queued',
          bytes: d.bytes,
          created_at: d.startedAt,
          updated_at: d.startedAt,
        });
      }
      case 'ContactImportCounted':
        await tx.query(
          `UPDATE contact_imports SET status = 'running', rows_total = $2, updated_at = $3
           WHERE id = $1 AND status = 'queued'`,
          [e.data.importId, e.data.rowsTotal, e.data.countedAt],
        );
        return;
      case 'ContactImportProgressed': {
        const d = e.data;
        // Applied once: a batch moves the job on only from the row it starts at.
        const { rowCount } = await tx.query(
          `UPDATE contact_imports SET rows_processed = $2 + $3, rows_created = rows_created + $4,
             rows_updated = rows_updated + $5, rows_skipped = rows_skipped + $6, updated_at = $7
           WHERE id = $1 AND rows_processed = $2`,
          [d.importId, d.fromRow, d.rows, d.created, d.updated, d.skipped, d.progressedAt],
        );
        if (rowCount && d.invalidRows.length > 0)
          await tx.query(
            `INSERT INTO contact_import_invalid_rows (import_id, line, reason)
             SELECT $1, line, reason FROM json_to_recordset($2::json) AS x(line int, reason text)
             ON CONFLICT DO NOTHING`,
            [d.importId, JSON.stringify(d.invalidRows)],
          );
        return;
      }
      case 'ContactImportFinished': {
        const d = e.data;
        return updateRow(tx, 'contact_imports', d.importId, {
          status: d.status,
          error: d.error && JSON.stringify(d.error),
          updated_at: d.finishedAt,
          finished_at: d.finishedAt,
        });
      }
    }
  },
};
