import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startPostline } from '../../bin/service.ts';
import { DEFAULT_SHAPING } from '../../domain/delivery/shaping-defaults.ts';
import { durationMs, parseShapingFile, shapingPolicyOf } from '../../domain/delivery/shaping-file.ts';
import { groupOf } from '../../domain/delivery/shaping-rules.ts';
import { ConfigError, loadConfig } from '../../platform/config.ts';

const dir = mkdtempSync(join(tmpdir(), 'postline-shaping-'));
const file = (name: string, json: unknown) => {
  const path = join(dir, name);
  writeFileSync(path, typeof json === 'string' ? json : JSON.stringify(json));
  return path;
};

describe('the shaping file', () => {
  it('given no file, the shipped groups apply', () => {
    expect(shapingPolicyOf(loadConfig({}))).toEqual(DEFAULT_SHAPING);
    expect(DEFAULT_SHAPING.groups.map((g) => g.name)).toEqual([
      'google',
      'microsoft',
      'yahoo',
      'icloud',
      'gmx-webde',
    ]);
  });

  it('given a group named as a shipped one, changes only the fields it gives', () => {
    // Given
    const path = file('tune.json', {
      groups: [
        { name: 'google', perHour: 2000, replies: [{ match: 'slow down', action: 'pause', for: '2h' }] },
      ],
    });
    // When
    const policy = shapingPolicyOf(loadConfig({ SHAPING_FILE: path }));
    // Then
    const google = policy.groups.find((g) => g.name === 'google');
    expect(google).toMatchObject({ perHour: 2000, perMinute: 200, mx: ['*.google.com', '*.googlemail.com'] });
    expect(google?.replies).toEqual([{ match: 'slow down', action: 'pause', forMs: 2 * 3600_000 }]);
    expect(policy.groups).toHaveLength(DEFAULT_SHAPING.groups.length);
  });

  it('given a new group, adds it with the default fields it leaves out; a changed default applies to the rest', () => {
    // Given
    const json = {
      default: { perMinute: 30 },
      groups: [{ name: 'proofpoint', mx: ['*.pphosted.com'], connections: 2 }],
    };
    // When
    const policy = parseShapingFile(json);
    // Then
    const pp = groupOf(policy, 'bank.example', ['mx0a-001.pphosted.com']);
    expect(pp).toEqual({
      name: 'proofpoint',
      limits: { connections: 2, messagesPerConnection: 100, perMinute: 30, perHour: null },
      replies: [],
    });
    expect(groupOf(policy, 'example.org', ['mx.example.org']).limits.perMinute).toBe(30);
    expect(groupOf(policy, 'gmail.com', ['gmail-smtp-in.l.google.com']).limits.perMinute).toBe(200);
  });

  it('given no file, a destination no group names is unmetered; a file may lift a rate with null', () => {
    expect(groupOf(parseShapingFile({}), 'example.org', ['mx.example.org']).limits).toMatchObject({
      perMinute: null,
      perHour: null,
    });
    const lifted = parseShapingFile({ groups: [{ name: 'google', perHour: null }] });
    expect(groupOf(lifted, 'gmail.com', ['gmail-smtp-in.l.google.com']).limits).toMatchObject({
      perMinute: 200,
      perHour: null,
    });
  });

  it('given a smarthost group, it gives the smarthost its limits', () => {
    const policy = parseShapingFile({
      groups: [{ name: 'smarthost', mx: ['relay.example.net'], perMinute: 1000 }],
    });
    expect(groupOf(policy, 'gmail.com', [], { smarthost: true }).limits.perMinute).toBe(1000);
  });

  it.each([
    [{ groups: [{ name: 'google', perMinute: 0 }] }, /groups\[0\] \("google"\)\.perMinute: /],
    [{ groups: [{ name: 'new-one', perMinute: 5 }] }, /groups\[0\] \("new-one"\): a new group needs mx/],
    [
      { groups: [{ name: 'x', mx: ['*.x.com'], replies: [{ match: '(', action: 'halve' }] }] },
      /replies\[0\]\.match: is not a valid regular expression/,
    ],
    [
      { groups: [{ name: 'x', mx: ['*.x.com'], replies: [{ match: 'busy', action: 'pause' }] }] },
      /a pause, and only a pause, has a for/,
    ],
    [
      { groups: [{ name: 'x', mx: ['*.x.com'], replies: [{ action: 'halve' }] }] },
      /needs a match or a status/,
    ],
    [
      {
        groups: [
          { name: 'x', mx: ['*.x.com'], replies: [{ status: '4.7.28', action: 'pause', for: '15 minutes' }] },
        ],
      },
      /for: is a duration such as 30s, 15m, 2h or 1d/,
    ],
    [{ groups: [{ name: 'x', mx: ['http://x.com'] }] }, /mx\[0\]: is a host name or \*\.domain pattern/],
    [{ groups: [{ name: 'mx:mine', mx: ['x.com'] }] }, /names starting mx: are the MX groups'/],
    [{ default: { perMinute: 5, burst: 3 } }, /^default: .*burst/],
    [[], /^the file: /],
  ])('given the faulty file %j, says what is wrong where', (json, message) => {
    expect(() => parseShapingFile(json)).toThrow(message);
  });

  it('stops start-up, naming SHAPING_FILE and the entry, on a faulty file; and on a missing or broken one', async () => {
    const config = loadConfig({
      SHAPING_FILE: file('faulty.json', { groups: [{ name: 'google', connections: -1 }] }),
    });
    await expect(startPostline(config)).rejects.toThrow(ConfigError);
    await expect(startPostline(config)).rejects.toThrow(
      /SHAPING_FILE: groups\[0\] \("google"\)\.connections: /,
    );
    expect(() => loadConfig({ SHAPING_FILE: join(dir, 'missing.json') })).toThrow(/SHAPING_FILE/);
    expect(() => loadConfig({ SHAPING_FILE: file('broken.json', '{"groups": [') })).toThrow(/SHAPING_FILE/);
  });

  it('reads durations in s, m, h and d', () => {
    expect(['30s', '15m', '2h', '1d'].map(durationMs)).toEqual([30_000, 900_000, 7_200_000, 86_400_000]);
  });
});
