import { describe, expect, it } from 'vitest';
import { MAX_DOMAIN_FUNCTION_LINES, MAX_FILE_LINES, sizeViolations } from '../support/code-size.ts';
import { repositoryRoot, repositorySources } from '../support/layering.ts';

describe('the size of production code', () => {
  it('has no file over 300 lines, no function over 60 lines in domain/, and an MX of routing only', () => {
    const sources = repositorySources(repositoryRoot);
    expect(sources.has('smtp/mx.ts')).toBe(true);
    expect(sizeViolations(sources)).toEqual([]);
  });
});

const lines = (n: number, line = 'x;') => Array.from({ length: n }, () => line).join('\n');

describe('the size check', () => {
  it('reports a long file, a long function in domain/, and a long MX', () => {
    const sources = new Map([
      ['write-side/emails/big.ts', lines(MAX_FILE_LINES + 1)],
      ['domain/emails/rules.ts', `export function decide() {\n${lines(MAX_DOMAIN_FUNCTION_LINES - 1)}\n}`],
      ['smtp/mx.ts', lines(101)],
    ]);
    expect(sizeViolations(sources)).toEqual([
      'write-side/emails/big.ts: 301 lines (at most 300)',
      'domain/emails/rules.ts: decide (61 lines)',
      'smtp/mx.ts: 101 lines (at most 100)',
    ]);
  });

  it('lets a function of 60 lines, a long function outside domain/, and generated code through', () => {
    const sources = new Map([
      [
        'domain/emails/rules.ts',
        `export const decide = () => {\n${lines(MAX_DOMAIN_FUNCTION_LINES - 2)}\n};`,
      ],
      ['processes/delivery/look.ts', `export function look() {\n${lines(100)}\n}`],
      ['sdk/generated/schema.ts', lines(5000)],
      ['dashboard/dist/assets/index.js', lines(5000)],
    ]);
    expect(sizeViolations(sources)).toEqual([]);
  });
});
