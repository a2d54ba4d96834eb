import { Readable, Transform } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import { AppError } from '../../platform/errors.ts';
import { isStorableString } from '../../platform/unstorable-text.ts';
import { CONTACT_FIELD_RULES, CONTACT_LIMITS } from '../contacts/contact-fields.ts';
import { InvalidUtf8 } from './invalid-utf8.ts';

/**
 * Reading a contact import's CSV: a header row naming `email` (any letter case), `first_name`, `last_name`, and
 * property columns; UTF-8, with or without a BOM, lines ending in CRLF, LF or CR, quoted fields (RFC 4180, stray quotes in unquoted
 * fields kept as text). Rows are read as a stream, each with the line it starts on (1 is the header). UTF-16LE
 * with its byte order mark is read too. Bytes that are not UTF-8 read as U+FFFD, and their record says so: a row
 * with a cell so damaged is skipped and reported rather than imported with a name it does not have.
 */

export interface CsvRecord {
  line: number;
  cells: string[];
  /** Some of the record's bytes are not UTF-8 (its cells hold U+FFFD in their place). */
  notUtf8?: true;
}

/** Why a row, or the header, is not read: its text is in another encoding (a spreadsheet's Latin-1 or Windows-1252). */
const NOT_UTF8 = 'is not valid UTF-8 (save the file as UTF-8)';

/** A file that is not CSV from `line` on: the import fails. The message never quotes the file. */
export class CsvFileError extends Error {
  readonly line: number | null;
  constructor(line: number | null, message: string) {
    super(message);
    this.line = line;
  }
}

/** A record longer than this is no contact: the file is refused rather than held in memory. */
const MAX_RECORD_BYTES = 1024 * 1024;

const CSV_ERRORS: Record<string, string> = {
  CSV_QUOTE_NOT_CLOSED: 'a quoted field is not closed',
  CSV_INVALID_CLOSING_QUOTE: 'a closing quote is followed by other characters',
  CSV_INVALID_OPENING_QUOTE: 'a field opens a quote in the wrong place',
  CSV_MAX_RECORD_SIZE: `a row is longer than ${MAX_RECORD_BYTES} bytes`,
  CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE: 'a closing quote is followed by other characters',
};

/**
 * Counts line breaks as the bytes go by (CRLF, LF or a lone CR, each one): `before(offset)` says how many lie
 * before a byte offset. Offsets are asked in increasing order, so the ones passed are dropped. A file that opens
 * with UTF-16LE's byte order mark (FF FE) is read by code units: its CRLF is one break, and a letter whose bytes
 * hold 0A or 0D (上, U+4E0A) none.
 */
class LineBreaks {
  #offsets: number[] = [];
  #head = 0;
  #passed = 0;
  #at = 0;
  #pendingCr = -1;
  /** The file's first two bytes, to tell a UTF-16LE one by its mark. */
  readonly #opening: number[] = [];
  #utf16 = false;
  /** UTF-16LE: the low byte of the code unit under way. */
  #low = 0;

  scan(chunk: Buffer): void {
    if (this.#at < 2) {
      this.#opening.push(...chunk.subarray(0, 2 - this.#at));
      this.#utf16 = this.#opening[0] === 0xff && this.#opening[1] === 0xfe;
    }
    if (this.#utf16) {
      this.#scanUtf16(chunk);
      return;
    }
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (this.#pendingCr >= 0) {
        this.#offsets.push(b === 10 ? this.#at + i : this.#pendingCr);
        this.#pendingCr = -1;
        if (b === 10) continue;
      }
      if (b === 10) this.#offsets.push(this.#at + i);
      else if (b === 13) this.#pendingCr = this.#at + i;
    }
    this.#at += chunk.length;
  }

  /** `scan` by code units, each at the offset of its first byte (the mark's first byte was read as any). */
  #scanUtf16(chunk: Buffer): void {
    for (let i = 0; i < chunk.length; i++) {
      const offset = this.#at + i;
      if (offset % 2 === 0) {
        this.#low = chunk[i];
        continue;
      }
      const unit = chunk[i] === 0 ? this.#low : -1;
      if (this.#pendingCr >= 0) {
        this.#offsets.push(unit === 10 ? offset - 1 : this.#pendingCr);
        this.#pendingCr = -1;
        if (unit === 10) continue;
      }
      if (unit === 10) this.#offsets.push(offset - 1);
      else if (unit === 13) this.#pendingCr = offset - 1;
    }
    this.#at += chunk.length;
  }

  end(): void {
    if (this.#pendingCr >= 0) this.#offsets.push(this.#pendingCr);
    this.#pendingCr = -1;
  }

  before(offset: number): number {
    while (this.#head < this.#offsets.length && this.#offsets[this.#head] < offset) {
      this.#head++;
      this.#passed++;
    }
    if (this.#head > 4096) {
      this.#offsets = this.#offsets.slice(this.#head);
      this.#head = 0;
    }
    return this.#passed;
  }
}

/** Every record of the file in order, the header first; blank rows (every cell empty) are left out. */
export async function* csvRecords(
  source: AsyncIterable<Buffer> | Readable,
  o: { headerOnly?: boolean } = {},
): AsyncGenerator<CsvRecord> {
  const breaks = new LineBreaks();
  const invalid = new InvalidUtf8();
  const scanner = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      breaks.scan(chunk);
      invalid.scan(chunk);
      done(null, chunk);
    },
    flush(done) {
      breaks.end();
      invalid.end();
      done();
    },
  });
  const parser = parse({
    bom: true,
    info: true,
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
    // Any line ending, also mixed in one file (an export edited by hand).
    record_delimiter: ['\r\n', '\n', '\r'],
    max_record_size: MAX_RECORD_BYTES,
    // The parser stops after the first line: what follows may be broken without hiding the header.
    ...(o.headerOnly && { to_line: 1 }),
  });
  const input = source instanceof Readable ? source : Readable.from(source);
  input.on('error', (e) => parser.destroy(e));
  input.pipe(scanner).pipe(parser);
  let previousEnd = 0;
  let previousEmpty = 0;
  try {
    for await (const { record, info } of parser as AsyncIterable<{
      record: string[];
      info: { bytes: number; empty_lines: number };
    }>) {
      const line = 1 + breaks.before(previousEnd) + (info.empty_lines - previousEmpty);
      const notUtf8 = invalid.within(previousEnd, info.bytes);
      previousEnd = info.bytes;
      previousEmpty = info.empty_lines;
      if (record.every((cell) => cell.trim() === '')) continue;
      yield notUtf8 ? { line, cells: record, notUtf8 } : { line, cells: record };
    }
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    const lines = typeof error.lines === 'number' ? error.lines : null;
    throw new CsvFileError(lines, `The file is not valid CSV: ${CSV_ERRORS[error.code] ?? error.code}.`);
  } finally {
    input.destroy();
  }
}

/** Where a column's cells go. */
export type Column =
  | { index: number; field: 'email' | 'first_name' | 'last_name' }
  | { index: number; field: 'property'; name: string };

const NAMED = ['email', 'first_name', 'last_name'] as const;

/**
 * The header row's columns. `email` is required; `email`, `first_name` and `last_name` are matched in any letter
 * case; any other named column is a property of that name; columns with an empty header are ignored.
 */
export function readHeader(cells: string[]): Column[] {
  const columns: Column[] = [];
  const seen = new Set<string>();
  cells.forEach((cell, index) => {
    const name = cell.trim();
    if (name === '') return;
    const lower = name.toLowerCase();
    if (!isStorableString(name) || seen.has(lower))
      throw new AppError(
        'validation_error',
        `The header row names column ${index + 1} twice or not as text: each column needs a name of its own.`,
      );
    seen.add(lower);
    const known = NAMED.find((n) => n === lower);
    if (known) columns.push({ index, field: known });
    else if (CONTACT_FIELD_RULES.propertyName.test(name)) columns.push({ index, field: 'property', name });
    else
      throw new AppError(
        'validation_error',
        `Column ${index + 1} of the header row is not a property name: names are 1 to ${CONTACT_LIMITS.propertyKeyChars} characters of A-Z a-z 0-9 _ (or email, first_name, last_name).`,
      );
  });
  if (!columns.some((c) => c.field === 'email'))
    throw new AppError('validation_error', 'The header row has no `email` column.');
  const properties = columns.filter((c) => c.field === 'property').length;
  if (properties > CONTACT_LIMITS.properties)
    throw new AppError(
      'validation_error',
      `The header row has ${properties} property columns; a contact has at most ${CONTACT_LIMITS.properties}.`,
    );
  return columns;
}

/** The columns of a header record: `readHeader`, for a header that is UTF-8. */
export function headerColumns(header: CsvRecord): Column[] {
  if (header.notUtf8)
    throw new AppError('validation_error', 'The header row is not valid UTF-8: save the file as UTF-8.');
  return readHeader(header.cells);
}

/** The header of a file, from its first record: refused with 422 when there is none or it breaks a rule. */
export async function headerOf(source: AsyncIterable<Buffer> | Readable): Promise<Column[]> {
  const records = csvRecords(source, { headerOnly: true });
  try {
    const first = await records.next();
    if (first.done) throw new AppError('validation_error', 'The file is empty: it needs a header row.');
    return headerColumns(first.value);
  } catch (error) {
    if (error instanceof CsvFileError)
      throw new AppError('validation_error', `${error.message.slice(0, -1)} in the header row.`);
    throw error;
  } finally {
    await records.return(undefined);
  }
}

/** A row as a contact: `firstName`/`lastName` undefined when its cell is empty (an existing contact keeps its own). */
export interface ContactRow {
  line: number;
  email: string;
  firstName?: string;
  lastName?: string;
  properties: Record<string, string>;
}

/** A valid row, or why it is skipped (naming the column, never the value). */
export function contactRow(
  columns: Column[],
  width: number,
  { line, cells, notUtf8 }: CsvRecord,
): ContactRow | { line: number; reason: string } {
  const skip = (reason: string) => ({ line, reason });
  if (cells.length !== width) return skip(`has ${cells.length} fields where the header has ${width}`);
  const row: ContactRow = { line, email: '', properties: {} };
  for (const column of columns) {
    const value = cells[column.index].trim();
    // The bytes that were not UTF-8 are in the cells that read U+FFFD; a cell the import ignores harms nothing.
    if (notUtf8 && value.includes('\uFFFD')) return skip(`${columnName(column)}: ${NOT_UTF8}`);
    if (!isStorableString(value))
      return skip(`${columnName(column)}: must not contain NUL or invalid characters`);
    if (value === '' && column.field !== 'email') continue;
    switch (column.field) {
      case 'email': {
        if (value === '') return skip('email: is missing');
        const parsed = CONTACT_FIELD_RULES.email.safeParse(value);
        if (!parsed.success) return skip(`email: ${parsed.error.issues[0].message}`);
        row.email = parsed.data;
        break;
      }
      case 'first_name':
      case 'last_name': {
        const parsed = CONTACT_FIELD_RULES.personName.safeParse(value);
        if (!parsed.success) return skip(`${column.field}: ${parsed.error.issues[0].message}`);
        row[column.field === 'first_name' ? 'firstName' : 'lastName'] = parsed.data ?? undefined;
        break;
      }
      case 'property':
        if (value.length > CONTACT_LIMITS.propertyValueChars)
          return skip(`${column.name}: must be at most ${CONTACT_LIMITS.propertyValueChars} characters`);
        row.properties[column.name] = value;
    }
  }
  return row;
}

const columnName = (c: Column) => (c.field === 'property' ? c.name : c.field);
