import type { Readable } from 'node:stream';
import {
  type Column,
  CsvFileError,
  type CsvRecord,
  contactRow,
  csvRecords,
  headerColumns,
} from '../../domain/contact-imports/contact-import.csv.ts';
import type { InvalidRow } from '../../domain/contact-imports/contact-import.events.ts';

/** A contact of an import: its id is the import's for that row, so a resumed run writes the same contact again. */
export interface ImportedContact {
  contactId: string;
  line: number;
  email: string;
  /** Undefined: the row gave none (an existing contact keeps its own). */
  firstName?: string;
  lastName?: string;
  properties: Record<string, string>;
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

/** The file's data rows (the header not counted). */
export async function countRows(file: Readable): Promise<number> {
  let n = -1; // the header
  for await (const _ of csvRecords(file)) n++;
  return Math.max(0, n);
}
