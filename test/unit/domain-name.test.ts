import { describe, expect, it } from 'vitest';
import { normalizeDomainName } from '../../domain/domains/domain-name.ts';

/** 227 characters: its DKIM record `<14-character selector>._domainkey.<name>` is 253, the most DNS allows. */
const LONGEST = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(31)}.com`;

describe('domain name normalisation', () => {
  it.each([
    ['example.com', 'example.com'],
    ['Mail.Example.COM', 'mail.example.com'],
    ['example.com.', 'example.com'],
    ['  example.org ', 'example.org'],
    ['bücher.example', 'xn--bcher-kva.example'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
    ['a-b.c-d.example.co.uk', 'a-b.c-d.example.co.uk'],
    [LONGEST, LONGEST],
  ])('accepts %s as %s', (input, name) => expect(normalizeDomainName(input)).toEqual({ name }));

  it('refuses a name too long for its DKIM record to fit in DNS (253 characters)', () => {
    const result = normalizeDomainName(`d${LONGEST}`);
    expect('error' in result && result.error).toContain('at most 227 characters');
  });

  it.each([
    ['', 'required'],
    ['localhost', 'two labels'],
    ['1.2.3.4', 'IP address'],
    ['[::1]', 'IP address'],
    ['::1', 'IP address'],
    ['exa_mple.com', 'not a valid'],
    ['ex ample.com', 'not a valid'],
    ['-example.com', 'invalid label'],
    ['example-.com', 'invalid label'],
    ['a..example.com', 'invalid label'],
    ['*.example.com', 'not a valid'],
    [`${'a'.repeat(64)}.com`, 'longer than 63'],
    [`${'abcdefghi.'.repeat(26)}com`, '253'],
    ['foo.123', 'not a valid'],
    ['example.com/path', 'not a valid'],
    ['xn--zz.com', 'invalid internationalized label'],
    ['mail.xn--a.example', 'invalid internationalized label'],
  ])('rejects %j', (input, reason) => {
    const result = normalizeDomainName(input);
    expect('error' in result && result.error).toContain(reason);
  });
});
