import { describe, expect, it } from 'vitest';
import { checkTemplateContent, TEMPLATE_LIMITS } from '../../domain/templates/content-rules.ts';
import type { TemplateContent, TemplateVariable } from '../../domain/templates/template.events.ts';
import { analyseTemplate, MAX_BLOCK_DEPTH } from '../../domain/templates/template-ast.ts';
import { AppError } from '../../platform/errors.ts';

const used = (source: string) => [...analyseTemplate('html', source).keys()].sort();
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    return (e as AppError).message;
  }
  throw new Error('expected a refusal');
};
const vars = (...names: string[]): TemplateVariable[] =>
  names.map((name) => ({ name, type: 'string', required: false }));
const content = (c: Partial<TemplateContent>): TemplateContent => ({
  subject: 'Hi',
  html: '<p>x</p>',
  text: null,
  variables: [],
  ...c,
});

describe('template analysis: which root variables a source reads', () => {
  it('finds plain, nested and helper-argument paths', () => {
    expect(
      used(
        '{{a}} {{b.c}} {{{d}}} {{#if e}}{{f}}{{else}}{{g}}{{/if}} {{lookup h "x"}} {{lookup i (lookup j 0)}}',
      ),
    ).toEqual(['a', 'b', 'd', 'e', 'f', 'g', 'h', 'i', 'j']);
  });
  it('does not count what a loop iterates over, but counts ../ and @root back to the root', () => {
    expect(
      used(
        '{{#each items}}{{name}} {{../title}} {{@root.footer}} {{@index}} {{this}}{{else}}{{empty}}{{/each}}',
      ),
    ).toEqual(['empty', 'footer', 'items', 'title']);
    expect(used('{{#each items as |item i|}}{{item.name}} {{i}}{{/each}}')).toEqual(['items']);
    expect(used('{{#with user}}{{first}} {{#if ../ok}}{{../x}}{{/if}}{{/with}}')).toEqual([
      'ok',
      'user',
      'x',
    ]);
    expect(used('{{this.a}} {{./b}}')).toEqual(['a', 'b']);
  });
  it("counts what reaches the template's own data by another name: #with this, @root, lookup on it", () => {
    expect(used('{{#with this}}{{secret}} {{#with .}}{{other}}{{/with}}{{/with}}')).toEqual([
      'other',
      'secret',
    ]);
    expect(used('{{#with @root}}{{a}}{{/with}} {{#each items}}{{#with ..}}{{b}}{{/with}}{{/each}}')).toEqual([
      'a',
      'b',
      'items',
    ]);
    expect(
      used('{{lookup this "x"}} {{lookup @root "y"}} {{#each items}}{{lookup .. "z"}}{{/each}}'),
    ).toEqual(['items', 'x', 'y', 'z']);
    // Inside a loop, `this` is the item: what it holds is the item's, not root data.
    expect(used('{{#each items}}{{#with this}}{{name}}{{/with}}{{lookup this "n"}}{{/each}}')).toEqual([
      'items',
    ]);
  });
  it('refuses reading the whole of the data where no name can be checked', () => {
    expect(refusal(() => used('{{#each this}}{{.}}{{/each}}'))).toMatch(
      /#each over the template's own data reads variables it does not declare at line 1, column 1/,
    );
    expect(refusal(() => used('{{#each @root}}x{{/each}}'))).toMatch(/#each over the template's own data/);
    expect(refusal(() => used('{{lookup this name}}'))).toMatch(/needs the variable's name in quotes/);
  });
  it('refuses partials, decorators, unknown helpers and unknown blocks, with the place', () => {
    expect(refusal(() => used('x\n {{> footer}}'))).toMatch(/partials are not supported at line 2, column 2/);
    expect(refusal(() => used('{{upper name}}'))).toMatch(/unknown helper `upper` at line 1, column 1/);
    expect(refusal(() => used('{{log name}}'))).toMatch(/unknown helper `log`/);
    expect(refusal(() => used('{{#items}}{{/items}}'))).toMatch(/unknown block helper `items`/);
    expect(refusal(() => used('{{#if a b}}{{/if}}'))).toMatch(/exactly one argument/);
    expect(refusal(() => used('{{if a}}'))).toMatch(/block helper/);
    expect(refusal(() => used('{{*decorator}}'))).toMatch(/not supported/);
  });
  it('refuses a ../ that climbs above the data, which renders empty every time', () => {
    // #if and #unless open no context: ../ inside them at the top level has nothing to climb to.
    expect(refusal(() => used('{{#if show}}{{../title}}{{/if}}'))).toMatch(
      /`\.\.\/title` climbs above the template's data .* at line 1, column 15$/,
    );
    expect(refusal(() => used('{{../title}}'))).toMatch(/climbs above/);
    expect(refusal(() => used('{{#each items}}{{../../title}}{{/each}}'))).toMatch(/climbs above/);
    expect(refusal(() => used('{{#with a}}{{lookup ../../b 0}}{{/with}}'))).toMatch(/climbs above/);
    expect(used('{{#each items}}{{#if x}}{{../title}}{{/if}}{{/each}}')).toEqual(['items', 'title']);
  });
  it('refuses `lookup` without exactly two arguments, which could never render', () => {
    expect(refusal(() => used('{{lookup items}}'))).toMatch(/`lookup` takes exactly 2 arguments/);
    expect(refusal(() => used('x {{lookup items 0 1}}'))).toMatch(/2 arguments at line 1, column 3/);
    expect(refusal(() => used('{{#if (lookup items)}}x{{/if}}'))).toMatch(/exactly 2 arguments/);
    expect(used('{{lookup items 0}} {{lookup (lookup a "b") "c"}}')).toEqual(['a', 'items']);
  });
  it('refuses blocks nested too deeply before parsing them', () => {
    const nested = (depth: number) => `${'{{#if a}}'.repeat(depth)}x${'{{/if}}'.repeat(depth)}`;
    expect(used(nested(MAX_BLOCK_DEPTH))).toEqual(['a']);
    expect(refusal(() => used(nested(MAX_BLOCK_DEPTH + 1)))).toMatch(/nested more than 100 deep/);
    // 40,000 deep (360 KB, under the size limit) would keep the parser busy for minutes.
    expect(refusal(() => used(nested(40_000)))).toMatch(/nested more than 100 deep/);
  });

  it('reports syntax errors with line and column', () => {
    expect(refusal(() => used('Hello\n{{name'))).toMatch(
      /^`html`: Handlebars syntax error at line 2, column \d+/,
    );
    expect(refusal(() => used('a\n\n{{#if x}}{{/each}}'))).toMatch(/line 3, column 4: if doesn't match each/);
  });
});

describe('template content rules', () => {
  it('needs a subject on one line and html or text', () => {
    expect(refusal(() => checkTemplateContent(content({ subject: ' ' })))).toMatch(/`subject`/);
    expect(refusal(() => checkTemplateContent(content({ subject: 'a\r\nBcc: x@y.z' })))).toMatch(
      /single line/,
    );
    expect(refusal(() => checkTemplateContent(content({ html: null, text: null })))).toMatch(
      /html, text or both/,
    );
  });
  it('limits each part to 512 KB', () => {
    const big = 'x'.repeat(TEMPLATE_LIMITS.partBytes + 1);
    expect(refusal(() => checkTemplateContent(content({ html: big })))).toMatch(
      /`html`: must be at most 512 KB/,
    );
    expect(() =>
      checkTemplateContent(content({ text: 'x'.repeat(TEMPLATE_LIMITS.partBytes) })),
    ).not.toThrow();
  });
  it('checks variable names and declarations in every part', () => {
    expect(refusal(() => checkTemplateContent(content({ variables: vars('first-name') })))).toMatch(
      /variables\[0\]\.name/,
    );
    expect(refusal(() => checkTemplateContent(content({ subject: 'Hi {{who}}' })))).toMatch(
      /`subject`: variable `who`/,
    );
    expect(() =>
      checkTemplateContent(content({ subject: 'Hi {{who}}', variables: vars('who', 'unused') })),
    ).not.toThrow();
  });
});
