import { describe, expect, it } from 'vitest';
import { AppError } from '../../platform/errors.ts';
import type { PublishedVersion } from '../../read-side/templates/templates.queries.ts';
import { renderVersion } from '../../write-side/templates/render.ts';

let n = 0;
const version = (v: Partial<PublishedVersion>): PublishedVersion => ({
  templateId: 'tmpl_1',
  versionId: `tmplv_test${n++}`,
  version: 1,
  subject: 'Hi',
  html: null,
  text: null,
  variables: [],
  ...v,
});
const renderError = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    expect((e as AppError).code).toBe('template_render_error');
    return (e as AppError).message;
  }
  throw new Error('expected a render error');
};

describe('rendering', () => {
  const tmpl = version({
    subject: 'Order {{name}} & co',
    html: '<p>{{name}}</p><div>{{{trusted}}}</div>',
    text: 'Hi {{name}}',
    variables: [
      { name: 'name', type: 'string', required: true },
      { name: 'trusted', type: 'string', required: false },
    ],
  });

  it('escapes HTML in html only, not in text or subject', () => {
    const out = renderVersion(tmpl, { name: '<b>Ann</b> & "Bo"', trusted: '<i>ok</i>' });
    expect(out.html).toBe('<p>&lt;b&gt;Ann&lt;/b&gt; &amp; &quot;Bo&quot;</p><div><i>ok</i></div>');
    expect(out.text).toBe('Hi <b>Ann</b> & "Bo"');
    expect(out.subject).toBe('Order <b>Ann</b> & "Bo" & co');
    expect(out.templateVersionId).toBe(tmpl.versionId);
  });

  it('names missing required variables; null counts as missing, extra keys are ignored', () => {
    const two = version({
      subject: '{{a}} {{b}}',
      text: 'x',
      variables: [
        { name: 'a', type: 'string', required: true },
        { name: 'b', type: 'string', required: true },
      ],
    });
    expect(renderError(() => renderVersion(two, { a: null, extra: 1 }))).toBe(
      'Missing required template variables: `a`, `b`',
    );
    expect(renderVersion(two, { a: 'x', b: 2, extra: 1 }).subject).toBe('x 2');
  });

  it('renders a variable’s fallback where the data does not give it, or gives null; a given value wins', () => {
    const greeting = version({
      subject: 'Hi {{name}}',
      html: '<p>{{name}}, {{count}} new</p>',
      variables: [
        { name: 'name', type: 'string', required: false, fallback: 'there' },
        { name: 'count', type: 'number', required: false, fallback: 0 },
      ],
    });
    expect(renderVersion(greeting, {})).toMatchObject({ subject: 'Hi there', html: '<p>there, 0 new</p>' });
    expect(renderVersion(greeting, { name: null, count: 3 }).html).toBe('<p>there, 3 new</p>');
    expect(renderVersion(greeting, { name: 'Ann' }).subject).toBe('Hi Ann');
  });

  it('reads only the data own keys: a variable named like an Object member is missing when not given', () => {
    const named = version({
      subject: '{{constructor}}',
      text: '[{{toString}}]',
      variables: [
        { name: 'constructor', type: 'string', required: true },
        { name: 'toString', type: 'string', required: false },
      ],
    });
    expect(renderError(() => renderVersion(named, {}))).toBe(
      'Missing required template variable: `constructor`',
    );
    expect(renderVersion(named, { constructor: 'Ann' })).toMatchObject({ subject: 'Ann', text: '[]' });
    expect(renderVersion(named, { constructor: 'Ann', toString: 'x' }).text).toBe('[x]');
  });

  it('renders variables named like the helpers Handlebars keeps for itself', () => {
    const named = version({
      subject: 'x',
      text: '{{helperMissing}} {{blockHelperMissing}}',
      variables: [
        { name: 'helperMissing', type: 'string', required: true },
        { name: 'blockHelperMissing', type: 'string', required: true },
      ],
    });
    expect(renderVersion(named, { helperMissing: 'a', blockHelperMissing: 'b' }).text).toBe('a b');
  });

  it('checks declared types', () => {
    const typed = version({
      subject: 'x',
      text: '{{n}}',
      variables: [{ name: 'n', type: 'number', required: false }],
    });
    expect(renderError(() => renderVersion(typed, { n: 'five' }))).toMatch(
      /`template_data.n`: must be a number/,
    );
  });

  it('rejects a subject that a variable breaks into two header lines', () => {
    expect(renderError(() => renderVersion(tmpl, { name: 'x\r\nBcc: victim@example.com' }))).toMatch(
      /line break/,
    );
    expect(renderError(() => renderVersion(tmpl, { name: 'x\nBcc: victim@example.com' }))).toMatch(
      /line break/,
    );
  });

  it('gives no access to prototype properties', () => {
    const proto = version({
      subject: 'x',
      text: '[{{obj.constructor.name}}][{{lookup obj "__proto__"}}][{{obj.__defineGetter__}}]',
      variables: [{ name: 'obj', type: 'object', required: true }],
    });
    expect(renderVersion(proto, { obj: {} }).text).toBe('[][][]');
  });

  it('limits the rendered size to 1 MB per part', () => {
    const loop = version({
      subject: 'x',
      html: '{{#each items}}{{this}}{{/each}}',
      variables: [{ name: 'items', type: 'array', required: true }],
    });
    const items = Array.from({ length: 1100 }, () => 'x'.repeat(1000));
    expect(renderError(() => renderVersion(loop, { items }))).toMatch(/rendered `html` is larger than 1 MB/);
  });

  it('stops nested loops that would run too long', () => {
    const nested = version({
      subject: 'x',
      text: '{{#each a}}{{#each ../a}}.{{/each}}{{/each}}',
      variables: [{ name: 'a', type: 'array', required: true }],
    });
    expect(
      renderError(() => renderVersion(nested, { a: Array.from({ length: 1000 }, (_, i) => i) })),
    ).toMatch(/iterations/);
    expect(renderVersion(nested, { a: [1, 2, 3] }).text).toBe('.'.repeat(9));
  });

  it('refuses before rendering what its values could blow up past 64M characters, and stops a loop that does', () => {
    // 100,000 mustaches of a 300 KB value: gigabytes built before the rendered size could be checked.
    const many = version({
      html: '{{b}}'.repeat(100_000),
      variables: [{ name: 'b', type: 'string', required: true }],
    });
    expect(renderError(() => renderVersion(many, { b: '<'.repeat(300_000) }))).toMatch(
      /larger than 64M characters/,
    );
    // A loop repeating a 100 KB value 1,000 times: stopped as its output passes the budget.
    const loop = version({
      text: '{{#each items}}{{../b}}{{/each}}',
      variables: [
        { name: 'items', type: 'array', required: true },
        { name: 'b', type: 'string', required: true },
      ],
    });
    const items = Array.from({ length: 1000 }, (_, i) => i);
    expect(renderError(() => renderVersion(loop, { items, b: 'x'.repeat(100_000) }))).toMatch(
      /larger than 64M characters/,
    );
    // A long value used once, beside many short ones, is fine: each top-level value is counted as itself.
    const one = version({
      html: `{{big}}${'{{small}}'.repeat(100)}`,
      variables: [
        { name: 'big', type: 'string', required: true },
        { name: 'small', type: 'string', required: true },
      ],
    });
    expect(renderVersion(one, { big: 'x'.repeat(500_000), small: 'y' }).html).toHaveLength(500_100);
  });
});
