import { describe, expect, it } from 'vitest';
import { DEFAULT_PAUSE, parseDuration } from '../../bin/cli/arguments.ts';

describe('queue pause --for', () => {
  it('reads days, hours, minutes and seconds, in that order', () => {
    expect(parseDuration('2h')).toBe(2 * 3600_000);
    expect(parseDuration('30m')).toBe(30 * 60_000);
    expect(parseDuration('1h30m')).toBe(90 * 60_000);
    expect(parseDuration('1d')).toBe(86_400_000);
    expect(parseDuration(' 45s ')).toBe(45_000);
    expect(parseDuration(DEFAULT_PAUSE)).toBe(3600_000);
  });

  it('refuses anything else, and nothing at all', () => {
    for (const text of ['', '0h', '2', 'h', '30m1h', '1.5h', '-1h', '2 hours', 'soon'])
      expect(parseDuration(text), text).toBeNull();
  });
});
