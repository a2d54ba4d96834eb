import { describe, expect, it } from 'vitest';
import { tlsFailureOf } from '../../processes/delivery/mta-sts/sts-delivery.ts';

describe('the RFC 8460 result of a verified session that failed', () => {
  it.each([
    ['ESOCKET: self-signed certificate', 'certificate-not-trusted'],
    ['ESOCKET: self-signed certificate in certificate chain', 'certificate-not-trusted'],
    ['ESOCKET: unable to verify the first certificate', 'certificate-not-trusted'],
    ['ESOCKET: unable to get local issuer certificate', 'certificate-not-trusted'],
    ['ESOCKET: certificate has expired', 'certificate-expired'],
    [
      "ESOCKET: Hostname/IP does not match certificate's altnames: Host: mx.a.test. is not in the cert's altnames: DNS:mx.b.test",
      'certificate-host-mismatch',
    ],
    ['ERROR: STARTTLS failed: 502 5.5.1 Unrecognized command', 'starttls-not-supported'],
  ])('reads %s as %s', (error, result) => {
    expect(tlsFailureOf(error)).toBe(result);
  });

  it('is no TLS failure when the host could not be reached', () => {
    expect(tlsFailureOf('ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:25')).toBeNull();
    expect(tlsFailureOf('ETIMEDOUT: Connection timeout')).toBeNull();
  });
});
