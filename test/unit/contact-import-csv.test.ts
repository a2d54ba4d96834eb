import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../platform/errors.ts';
import {
  CsvFileError,
  type CsvRecord,
  contactRow,
  csvRecords,
  headerOf,
  readHeader,
} from '../../write-side/contact-imports/contact-import.csv.ts';

/** The file's records, fed in pieces of `size` bytes (line breaks and quotes fall across pieces). */
async function records(text: string, size = 3): Promise<CsvRecord[]> {
  const bytes = Buffer.from(text);
  const pieces = Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) =>
    bytes.subarray(i * size, (i + 1) * size),
  );
  const out: CsvRecord[] = [];
  for await (const r of csvRecords(Readable.from(pieces))) out.push(r);
  return out;
}

describe('contact import CSV', () => {
  it('names each record by the line it starts on, across CRLF, LF, lone CR, blank lines and quoted breaks', async () => {
    const text =
      '\uFEFFemail,name\r\na@x.org,"A, B"\r\n\r\nb@x.org,"two\r\nlines"\nc@x.org,c\rd@x.org,"say ""hi"""\n,\n\ne@x.org,e';
    expect(await records(text)).toEqual([
      { line: 1, cells: ['email', 'name'] },
      { line: 2, cells: ['a@x.org', 'A, B'] },
      { line: 4, cells: ['b@x.org', 'two\r\nlines'] },
      { line: 6, cells: ['c@x.org', 'c'] },
      { line: 7, cells: ['d@x.org', 'say "hi"'] },
      { line: 10, cells: ['e@x.org', 'e'] },
    ]);
    // The same, whole.
    expect((await records(text, 1 << 20)).map((r) => r.line)).toEqual([1, 2, 4, 6, 7, 10]);
  });

  it('fails a file that is not CSV with its line, quoting nothing of it', async () => {
    const error = await records('email\na@x.org\n"secret@x.org\n').catch((e) => e);
    expect(error).toBeInstanceOf(CsvFileError);
    expect(error.message).toBe('The file is not valid CSV: a quoted field is not closed.');
    expect(error.message).not.toContain('secret');
  });

  it('reads the header: email required, known names in any case, properties by name, empty names ignored', () => {
    expect(readHeader(['Email', 'FIRST_NAME', 'Last_Name', 'plan', ''])).toEqual([
      { index: 0, field: 'email' },
      { index: 1, field: 'first_name' },
      { index: 2, field: 'last_name' },
      { index: 3, field: 'property', name: 'plan' },
    ]);
    for (const bad of [
      ['name'],
      ['email', 'EMAIL'],
      ['email', 'bad name'],
      [
        'email',
        ...Array(51)
          .fill('p')
          .map((p, i) => `${p}${i}`),
      ],
    ])
      expect(() => readHeader(bad)).toThrow(AppError);
  });

  it('refuses a file without a header, and reads the header of a file broken further on', async () => {
    await expect(headerOf(Readable.from([Buffer.from('\r\n\r\n')]))).rejects.toThrow(/empty/);
    await expect(headerOf(Readable.from([Buffer.from('email\n"open\n')]))).resolves.toHaveLength(1);
  });

  it('turns a row into a contact, or names the column that keeps it out', () => {
    const header = readHeader(['email', 'first_name', 'last_name', 'plan']);
    const row = (cells: string[]) => contactRow(header, 4, { line: 5, cells });
    expect(row([' Ann@X.org ', 'Ann', '', 'pro'])).toEqual({
      line: 5,
      email: 'Ann@X.org',
      firstName: 'Ann',
      properties: { plan: 'pro' },
    });
    expect(row(['', 'Ann', '', ''])).toEqual({ line: 5, reason: 'email: is missing' });
    expect(row(['nope', '', '', ''])).toEqual({ line: 5, reason: 'email: must be a valid email address' });
    expect(row(['a@x.org', 'x'.repeat(257), '', ''])).toEqual({
      line: 5,
      reason: 'first_name: must be at most 256 characters',
    });
    expect(row(['a@x.org', '', '', 'v'.repeat(1001)])).toEqual({
      line: 5,
      reason: 'plan: must be at most 1000 characters',
    });
    expect(row(['a@x.org', 'A\u0000', '', ''])).toEqual({
      line: 5,
      reason: 'first_name: must not contain NUL or invalid characters',
    });
    expect(row(['a@x.org', ''])).toEqual({ line: 5, reason: 'has 2 fields where the header has 4' });
  });
});
