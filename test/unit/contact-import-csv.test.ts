import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  CsvFileError,
  type CsvRecord,
  contactRow,
  csvRecords,
  headerOf,
  readHeader,
} from '../../domain/contact-imports/contact-import.csv.ts';
import { InvalidUtf8 } from '../../domain/contact-imports/invalid-utf8.ts';
import { AppError } from '../../platform/errors.ts';

/** The file's records, fed in pieces of `size` bytes (line breaks and quotes fall across pieces). */
async function records(text: string | Buffer, size = 3): Promise<CsvRecord[]> {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
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

  it('names the lines of a UTF-16LE file as those of a UTF-8 one: CRLF is one break, and no letter is one', async () => {
    // 上 (U+4E0A) and ഍ (U+0D0D) hold the bytes of LF and CR; CRLF is four bytes.
    const text = '\uFEFFemail,name\r\na@x.org,上\r\n\r\nb@x.org,"two\r\nlines"\nc@x.org,഍\rd@x.org,d\r\n';
    for (const size of [1, 3, 1 << 20])
      expect((await records(Buffer.from(text, 'utf16le'), size)).map((r) => [r.line, r.cells[1]])).toEqual([
        [1, 'name'],
        [2, '上'],
        [4, 'two\r\nlines'],
        [6, '഍'],
        [7, 'd'],
      ]);
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

  it('finds the bytes that are not UTF-8, also across pieces, and nothing in well-formed text', () => {
    /** The offsets where an invalid sequence begins, the same whichever way the bytes are cut into pieces. */
    const invalidIn = (bytes: number[]) => {
      const found = [1, 2, 3, bytes.length].map((size) => {
        const scan = new InvalidUtf8();
        for (let i = 0; i < bytes.length; i += size) scan.scan(Buffer.from(bytes.slice(i, i + size)));
        scan.end();
        return bytes.flatMap((_, i) => (scan.within(i, i + 1) ? [i] : []));
      });
      for (const other of found.slice(1)) expect(other).toEqual(found[0]);
      return found[0];
    };
    expect(invalidIn([...Buffer.from('aé€😀\u07ff\uffff\u{10ffff}z')])).toEqual([]);
    expect(invalidIn([0x61, 0xe9, 0x62])).toEqual([1]); // Latin-1 é
    expect(invalidIn([0x80, 0xbf])).toEqual([0, 1]); // continuation bytes alone
    expect(invalidIn([0xc0, 0xaf, 0xe0, 0x80, 0xaf])).toEqual([0, 1, 2, 3, 4]); // overlong forms
    expect(invalidIn([0xed, 0xa0, 0x80])).toEqual([0, 1, 2]); // a surrogate
    expect(invalidIn([0xf4, 0x90, 0x80, 0x80, 0xf5])).toEqual([0, 1, 2, 3, 4]); // past U+10FFFF
    expect(invalidIn([0xe2, 0x82, 0x61])).toEqual([0]); // € cut short
    expect(invalidIn([0x61, 0xf0, 0x9f, 0x98])).toEqual([1]); // cut short by the end of the file
  });

  it('marks the records that hold bytes not UTF-8 (never those of a UTF-16LE file), and reports the column of the cell they damaged', async () => {
    const file = Buffer.concat([
      Buffer.from('email,first_name,city,\nann@x.org,Ann,Paris,\nbea@x.org,B'),
      Buffer.from([0xe9]),
      Buffer.from('a,Lyon,\n"kim@x.org","Kim\n",Oslo,'),
      Buffer.from([0xff]),
      Buffer.from('\nzoe@x.org,Zoë,Köln,\n'),
    ]);
    const read = await records(file, 2);
    expect(read.map((r) => [r.line, r.notUtf8 ?? false])).toEqual([
      [1, false],
      [2, false],
      [3, true],
      [4, true],
      [6, false],
    ]);
    const header = readHeader(read[0].cells);
    expect(contactRow(header, 4, read[2])).toEqual({
      line: 3,
      reason: 'first_name: is not valid UTF-8 (save the file as UTF-8)',
    });
    // The damaged cell is one the import ignores (no header): the row is read.
    expect(contactRow(header, 4, read[3])).toMatchObject({ line: 4, email: 'kim@x.org', firstName: 'Kim' });
    expect(contactRow(header, 4, read[4])).toMatchObject({ firstName: 'Zoë', properties: { city: 'Köln' } });
    // A UTF-16LE file, read by its byte order mark: none of its bytes is taken for broken UTF-8.
    const utf16 = await records(Buffer.from('\uFEFFemail,first_name\nzoe@x.org,Zoë\n', 'utf16le'), 1);
    expect(utf16).toEqual([
      { line: 1, cells: ['email', 'first_name'] },
      { line: 2, cells: ['zoe@x.org', 'Zoë'] },
    ]);
  });

  it('refuses control characters in names, as the API does', () => {
    const header = readHeader(['email', 'first_name', 'last_name']);
    expect(contactRow(header, 3, { line: 4, cells: ['a@x.org', 'Dan\r\nBcc: b@x.org', ''] })).toEqual({
      line: 4,
      reason: 'first_name: must not contain control characters (line breaks, tabs and the like)',
    });
    expect(contactRow(header, 3, { line: 4, cells: ['a@x.org', 'Dan', 'A\tB'] })).toEqual({
      line: 4,
      reason: 'last_name: must not contain control characters (line breaks, tabs and the like)',
    });
  });
});
