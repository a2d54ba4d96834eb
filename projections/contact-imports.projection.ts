import type { ContactImportEvent } from '../write-side/contact-imports/contact-import.events.ts';
import type { Projection } from './projection.ts';

/** Contact import jobs: status, counts and the invalid rows they list. */
export const contactImportsProjection: Projection<ContactImportEvent> = {
  name: 'contact_imports',
  tables: ['contact_imports', 'contact_import_invalid_rows'],
  types: ['ContactImportStarted', 'ContactImportCounted', 'ContactImportProgressed', 'ContactImportFinished'],
  async apply(tx, e) {
    switch (e.type) {
      case 'ContactImportStarted': {
        const d = e.data;
        await tx.query(
          `INSERT INTO contact_imports (id, org_id, mode, audience_id, status, bytes, created_at, updated_at)
           VALUES ($1, $2, $3, $4, 'queued', $5, $6, $6) ON CONFLICT (id) DO NOTHING`,
          [d.importId, d.orgId, d.mode, d.audienceId, d.bytes, d.startedAt],
        );
        return;
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
      case 'ContactImportFinished':
        await tx.query(
          `UPDATE contact_imports SET status = $2, error = $3, updated_at = $4, finished_at = $4 WHERE id = $1`,
          [e.data.importId, e.data.status, e.data.error && JSON.stringify(e.data.error), e.data.finishedAt],
        );
        return;
    }
  },
};
