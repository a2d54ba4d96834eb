import { describe, expect, it } from 'vitest';
import { textFromHtml } from '../../domain/emails/text-from-html.ts';

describe('the text part made from an email’s html', () => {
  it('keeps the words and links, leaves out images, styles and what the reader never sees', () => {
    const html =
      '<html><head><style>p{color:red}</style></head><body>' +
      '<div style="display:none;max-height:0">Preview</div><p>Your order <b>#1234</b> is on its way. ' +
      '<a href="https://acme.test/o/1">Track it</a></p><img src="logo.png" alt="Acme">' +
      '<ul><li>one</li><li>two</li></ul><a href="https://acme.test">https://acme.test</a></body></html>';
    expect(textFromHtml(html)).toBe(
      'Your order #1234 is on its way. Track it [https://acme.test/o/1]\n\n * one\n * two\n\nhttps://acme.test',
    );
  });

  it('wraps long lines at 78 characters', () => {
    const lines = textFromHtml(`<p>${'word '.repeat(40)}</p>`).split('\n');
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(78);
  });
});
