import { isOneOf, type StoredEvent } from '../../platform/eventstore/types.ts';
import type { ContactImportStatus } from './contact-import.decider.ts';
import {
  CONTACT_IMPORT_EVENT_TYPES,
  type ContactImportEvent,
  type InvalidRow,
} from './contact-import.events.ts';

export interface ContactImportReport {
  status: ContactImportStatus;
  rowsTotal: number | null;
  created: number;
  updated: number;
  skipped: number;
  invalidRows: InvalidRow[];
  error: { line: number | null; message: string } | null;
}

/** What an import did, from its log: counts, the rows it lists as skipped, and why it failed. */
export function contactImportReport(events: readonly StoredEvent[]): ContactImportReport {
  const report: ContactImportReport = {
    status: 'queued',
    rowsTotal: null,
    created: 0,
    updated: 0,
    skipped: 0,
    invalidRows: [],
    error: null,
  };
  for (const event of events) {
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
