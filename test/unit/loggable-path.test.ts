import { describe, expect, it } from 'vitest';
import { loggablePath } from '../../platform/http/request-log.ts';

describe('loggablePath', () => {
  it('writes the capability of an unsubscribe or tracking path as [redacted], however the path is spelled', () => {
    expect(loggablePath('/unsubscribe/em_1-abc')).toBe('/unsubscribe/[redacted]');
    expect(loggablePath('/t/o/AbC.gif')).toBe('/t/o/[redacted]');
    expect(loggablePath('/t/c/AbC')).toBe('/t/c/[redacted]');
    expect(loggablePath('/T/C/AbC/')).toBe('/T/C/[redacted]');
    expect(loggablePath('//t//c/AbC')).toBe('//t/[redacted]');
    expect(loggablePath('/%74/%63/AbC')).toBe('/%74/%63/[redacted]');
    expect(loggablePath('/t%2Fc%2FAbC')).toBe('/t%2Fc%2F[redacted]');
    expect(loggablePath('/t/x/AbC')).toBe('/t/[redacted]');
    expect(loggablePath('/unsubscribe/em_1-abc/more')).toBe('/unsubscribe/[redacted]');
  });

  it('writes an email address in a path (a contact named by it) as [address], encoded or not', () => {
    expect(loggablePath('/v1/contacts/Ann@Example.org')).toBe('/v1/contacts/[address]');
    expect(loggablePath('/v1/contacts/ann%40example.org/topics')).toBe('/v1/contacts/[address]/topics');
    expect(loggablePath('/v1/contacts/ann@example.org/segments/aud_1')).toBe(
      '/v1/contacts/[address]/segments/aud_1',
    );
    expect(loggablePath('/unsubscribe/a@b')).toBe('/unsubscribe/[redacted]');
  });

  it('keeps every other path, and those with nothing to hide, as they are', () => {
    for (const path of [
      '/',
      '',
      '/v1/emails/em_1',
      '/t',
      '/t/',
      '/t/c',
      '/t/o/',
      '/unsubscribe',
      '/unsubscribe/',
      '/tracking/x',
      '/blobs/k',
      '/v1/t/c/x',
    ])
      expect(loggablePath(path)).toBe(path);
  });
});
