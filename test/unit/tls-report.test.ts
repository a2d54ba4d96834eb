import { describe, expect, it } from 'vitest';
import {
  buildTlsReport,
  parseTlsRptRecord,
  tlsReportFilename,
  tlsReportSubject,
} from '../../domain/delivery/tls-report.ts';

describe('the _smtp._tls TXT record (RFC 8460 §3)', () => {
  it('gives the mailto and https rua of the one TLSRPTv1 record', () => {
    expect(
      parseTlsRptRecord([
        ['v=TLSRPTv1; rua=mailto:tls%2Breports@example.com,', 'https://reports.example.com/tls'],
        ['unrelated'],
      ]),
    ).toEqual([
      { kind: 'mailto', address: 'tls+reports@example.com' },
      { kind: 'https', url: 'https://reports.example.com/tls' },
    ]);
  });
  it('ignores other schemes, several records and records without rua', () => {
    expect(parseTlsRptRecord([['v=TLSRPTv1; rua=http://insecure.example.com/,ftp://x']])).toEqual([]);
    expect(parseTlsRptRecord([['v=TLSRPTv1; rua=mailto:a@b.c'], ['v=TLSRPTv1; rua=mailto:d@e.f']])).toEqual(
      [],
    );
    expect(parseTlsRptRecord([['v=TLSRPTv1']])).toEqual([]);
  });
});

describe('the report (RFC 8460 §4)', () => {
  const policyText = 'version: STSv1\r\nmode: enforce\r\nmx: mx.example.com\r\nmax_age: 86400\r\n';
  it('sums successes and failures per policy, with the failures in detail', () => {
    const sts = { policyType: 'sts' as const, policyText, mxPatterns: ['mx.example.com'] };
    const report = buildTlsReport({
      day: '2026-07-01',
      policyDomain: 'example.com',
      organizationName: 'Postline at mail.sender.test',
      contactInfo: 'postmaster@sender.test',
      reportId: '2026-07-01.example.com@mail.sender.test',
      counts: [
        { ...sts, resultType: null, receivingMx: 'mx.example.com', sessions: 3 },
        { ...sts, resultType: 'certificate-not-trusted', receivingMx: 'mx.example.com', sessions: 2 },
        { ...sts, resultType: 'validation-failure', receivingMx: 'other.example.net', sessions: 1 },
        {
          policyType: 'no-policy-found',
          policyText: '',
          mxPatterns: [],
          resultType: null,
          receivingMx: 'x',
          sessions: 4,
        },
      ],
    });
    expect(report).toEqual({
      'organization-name': 'Postline at mail.sender.test',
      'date-range': { 'start-datetime': '2026-07-01T00:00:00Z', 'end-datetime': '2026-07-01T23:59:59Z' },
      'contact-info': 'postmaster@sender.test',
      'report-id': '2026-07-01.example.com@mail.sender.test',
      policies: [
        {
          policy: {
            'policy-type': 'sts',
            'policy-string': ['version: STSv1', 'mode: enforce', 'mx: mx.example.com', 'max_age: 86400'],
            'mx-host': ['mx.example.com'],
            'policy-domain': 'example.com',
          },
          summary: { 'total-successful-session-count': 3, 'total-failure-session-count': 3 },
          'failure-details': [
            {
              'result-type': 'certificate-not-trusted',
              'receiving-mx-hostname': 'mx.example.com',
              'failed-session-count': 2,
            },
            {
              'result-type': 'validation-failure',
              'receiving-mx-hostname': 'other.example.net',
              'failed-session-count': 1,
            },
          ],
        },
        {
          policy: { 'policy-type': 'no-policy-found', 'policy-domain': 'example.com' },
          summary: { 'total-successful-session-count': 4, 'total-failure-session-count': 0 },
          'failure-details': [],
        },
      ],
    });
  });
  it('names its mail and attachment as RFC 8460 §5 says', () => {
    expect(tlsReportSubject('example.com', 'mail.sender.test', 'r1@mail.sender.test')).toBe(
      'Report Domain: example.com Submitter: mail.sender.test Report-ID: <r1@mail.sender.test>',
    );
    expect(tlsReportFilename('mail.sender.test', 'example.com', '2026-07-01', 'r1@x')).toBe(
      'mail.sender.test!example.com!1782864000!1782950399!r1-x.json.gz',
    );
  });
});
