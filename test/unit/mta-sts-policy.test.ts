import { describe, expect, it } from 'vitest';
import {
  MAX_POLICY_AGE_S,
  mxMatches,
  parseStsPolicy,
  parseStsRecord,
  policyNames,
  type StsPolicy,
} from '../../domain/delivery/mta-sts-policy.ts';

const policyText = (lines: string[]) => `${lines.join('\r\n')}\r\n`;

describe('the _mta-sts TXT record (RFC 8461 §3.1)', () => {
  it('gives the id of the one STSv1 record, its strings joined', () => {
    expect(parseStsRecord([['v=STSv1; id=20260701T0900'], ['other record']])).toBe('20260701T0900');
    expect(parseStsRecord([['v=STSv1; ', 'id=abc123;']])).toBe('abc123');
  });
  it('is no policy when there are several STSv1 records, none, or an invalid id', () => {
    expect(parseStsRecord([['v=STSv1; id=a'], ['v=STSv1; id=b']])).toBeNull();
    expect(parseStsRecord([])).toBeNull();
    expect(parseStsRecord([['v=STSv2; id=a']])).toBeNull();
    expect(parseStsRecord([['v=STSv1; id=not-alnum']])).toBeNull();
    expect(parseStsRecord([['v=STSv1; id=123456789012345678901234567890123']])).toBeNull();
    expect(parseStsRecord([['v=STSv1']])).toBeNull();
  });
});

describe('the policy file (RFC 8461 §3.2)', () => {
  it('reads version, mode, max_age and mx lines (CRLF or LF), ignoring unknown keys', () => {
    const text = policyText([
      'version: STSv1',
      'mode: enforce',
      'mx: mail.example.com',
      'mx: *.Backup.Example.com.',
      'max_age: 604800',
      'future_key: x',
    ]);
    expect(parseStsPolicy(text)).toEqual({
      mode: 'enforce',
      mx: ['mail.example.com', '*.backup.example.com'],
      maxAge: 604800,
      text,
    });
    const lf = 'version: STSv1\nmode: testing\nmx: mx.example.com\nmax_age: 86400\n';
    expect((parseStsPolicy(lf) as StsPolicy).mode).toBe('testing');
  });
  it('caps max_age at a year and takes mode none without mx', () => {
    const none = parseStsPolicy('version: STSv1\nmode: none\nmax_age: 9999999999\n');
    expect(none).toMatchObject({ mode: 'none', mx: [], maxAge: MAX_POLICY_AGE_S });
  });
  it.each([
    ['no version', 'mode: enforce\nmx: a.example.com\nmax_age: 1\n'],
    ['another version', 'version: STSv2\nmode: enforce\nmx: a.example.com\nmax_age: 1\n'],
    ['an unknown mode', 'version: STSv1\nmode: strict\nmx: a.example.com\nmax_age: 1\n'],
    ['two modes', 'version: STSv1\nmode: enforce\nmode: testing\nmx: a.example.com\nmax_age: 1\n'],
    ['no max_age', 'version: STSv1\nmode: enforce\nmx: a.example.com\n'],
    ['a negative max_age', 'version: STSv1\nmode: enforce\nmx: a.example.com\nmax_age: -1\n'],
    ['enforce without mx', 'version: STSv1\nmode: enforce\nmax_age: 1\n'],
    ['a wildcard of two labels', 'version: STSv1\nmode: enforce\nmx: *.*.example.com\nmax_age: 1\n'],
    ['a line without a colon', 'version: STSv1\nmode: enforce\nmx a.example.com\nmax_age: 1\n'],
    ['an HTML page', '<html><body>not found</body></html>'],
  ])('refuses a policy with %s', (_, text) => {
    expect(parseStsPolicy(text)).toBeInstanceOf(Error);
  });
});

describe('MX host matching (RFC 8461 §4.1)', () => {
  it('matches exactly, case and final dot aside', () => {
    expect(mxMatches('Mail.Example.com.', 'mail.example.com')).toBe(true);
    expect(mxMatches('mail2.example.com', 'mail.example.com')).toBe(false);
  });
  it('matches a wildcard on one label only', () => {
    expect(mxMatches('mx1.example.com', '*.example.com')).toBe(true);
    expect(mxMatches('a.mx1.example.com', '*.example.com')).toBe(false);
    expect(mxMatches('example.com', '*.example.com')).toBe(false);
  });
  it('names a host when any pattern matches', () => {
    const policy = parseStsPolicy(
      'version: STSv1\nmode: enforce\nmx: a.example.com\nmx: *.b.example.com\nmax_age: 60\n',
    );
    expect(policyNames(policy as StsPolicy, 'x.b.example.com')).toBe(true);
    expect(policyNames(policy as StsPolicy, 'evil.example.net')).toBe(false);
  });
});
