import { describe, expect, it } from 'vitest';
import { AppError } from '../../platform/errors.ts';
import {
  cutText,
  findUnstorableText,
  isStorableString,
  refuseUnstorableText,
} from '../../platform/unstorable-text.ts';

describe('the text rule', () => {
  it('refuses a lone high or low surrogate and NUL; a pair, U+FFFD and other controls are fine', () => {
    for (const bad of ['\ud800', 'a\udbff', '\udc00b', 'x\udfffy', '\ud83d\ud83d', '\u0000', 'a\u0000']) {
      expect(isStorableString(bad), JSON.stringify(bad)).toBe(false);
    }
    for (const good of ['', 'plain', '\ud83d\ude00', '\ufffd', '\u0001\t\r\n', '\uffff']) {
      expect(isStorableString(good), JSON.stringify(good)).toBe(true);
    }
  });

  it('names the path of the first unstorable string, value or key, and of nothing when all are fine', () => {
    const ok = { a: ['x', { b: 'y' }], n: 1, t: true, z: null };
    expect(findUnstorableText(ok)).toBeUndefined();
    expect(findUnstorableText({ to: ['ann', 'b\ud800'] })).toBe('to[1]');
    expect(findUnstorableText([{ headers: { 'X-Tag': '\u0000' } }])).toBe('[0].headers.X-Tag');
    expect(findUnstorableText({ template_data: { 'k\udc00': 1 } })).toBe('template_data.k\\udc00');
    expect(findUnstorableText({ a: 'fine', b: '\ud800', c: '\u0000' })).toBe('b');
    expect(findUnstorableText({ a: { x: '\ud800' }, 'b\u0000': 1 })).toBe('a.x');
    expect(findUnstorableText({ a: { 'x\u0000': 'y\ud800' } })).toBe('a.x\\u0000');
    expect(findUnstorableText({ limit: '%00\u0000' }, 'query')).toBe('query.limit');
    expect(findUnstorableText('\ud800')).toBe('');
  });

  it('walks any depth a body parser accepts without overflowing the stack', () => {
    let deep: unknown = '\u0000';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(findUnstorableText(deep)).toBe('[0]'.repeat(200_000));
  });

  it('refuses with a 422 validation_error naming the field', () => {
    expect(() => refuseUnstorableText({ subject: 'a\ud800' })).toThrow(
      new AppError('validation_error', '`subject`: must not contain a lone UTF-16 surrogate or NUL'),
    );
    expect(() => refuseUnstorableText({ subject: 'a\ud83d\ude00' })).not.toThrow();
  });

  it('cuts text without splitting a surrogate pair', () => {
    expect(cutText('ab\ud83d\ude00', 3)).toBe('ab');
    expect(cutText('ab\ud83d\ude00', 4)).toBe('ab\ud83d\ude00');
    expect(cutText('abc', 2)).toBe('ab');
    expect(isStorableString(cutText(`Copy of ${'\ud83d\ude00'.repeat(100)}`, 200))).toBe(true);
  });
});
