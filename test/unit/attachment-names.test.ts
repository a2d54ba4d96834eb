import { describe, expect, it } from 'vitest';
import { fitFileName } from '../../domain/emails/attachment-types.ts';
import { attachmentName } from '../../domain/emails/request.ts';

describe('a file name the sender did not choose as such, made fit to keep', () => {
  it.each([
    ['invoice.pdf', 'invoice.pdf'],
    ['../../etc\0\npasswd', '.._.._etc__passwd'],
    ['a\r\nb\\c', 'a__b_c'],
    ['', 'attachment'],
    [`${'x'.repeat(254)}😀`, 'x'.repeat(254)],
    [`${'x'.repeat(253)}😀`, `${'x'.repeat(253)}😀`],
  ])('given %j: %j', (name, expected) => {
    expect(fitFileName(name)).toBe(expected);
  });
});

describe('an attachment’s name', () => {
  it('is its filename when it has one, else the last segment of its path, decoded', () => {
    expect(attachmentName({ filename: 'mine.pdf', path: 'https://f.test/a/b.pdf' })).toBe('mine.pdf');
    expect(attachmentName({ path: 'https://f.test/a/Invoice%2042.pdf?sig=%2F' })).toBe('Invoice 42.pdf');
    expect(attachmentName({ path: 'https://f.test/a/%2F..%00x' })).toBe('_.._x');
    // Not UTF-8 once decoded: kept as written.
    expect(attachmentName({ path: 'https://f.test/a/%E0%A4%A' })).toBe('%E0%A4%A');
    expect(attachmentName({ path: 'https://f.test/' })).toBe('attachment');
  });
});
