import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startPostline } from '../../bin/service.ts';
import { egressPolicyOf, MACHINE_EGRESS, parseSourcesFile } from '../../domain/delivery/egress-file.ts';
import { weightedOrder } from '../../domain/delivery/egress-pick.ts';
import { poolOf } from '../../domain/delivery/egress-sources.ts';
import {
  DEFAULT_WARMUP,
  nextDayStart,
  utcDay,
  warmupCap,
  warmupDay,
} from '../../domain/delivery/egress-warmup.ts';
import { ConfigError, loadConfig } from '../../platform/config.ts';

const dir = mkdtempSync(join(tmpdir(), 'postline-sources-'));
const file = (name: string, json: unknown) => {
  const path = join(dir, name);
  writeFileSync(path, typeof json === 'string' ? json : JSON.stringify(json));
  return path;
};

const sources = [
  { name: 'a', address: '192.0.2.10', helo: 'out-a.example.net', warmup: { started: '2026-11-28' } },
  { name: 'b', address: '192.0.2.11', helo: 'Out-B.example.net', weight: 3 },
  { name: 'c', address: '2001:db8::12', helo: 'out-c.example.net', warmup: false },
];
const valid = {
  sources,
  pools: [
    { name: 'shared', sources: ['a', 'b'] },
    { name: 'bulk', sources: ['c'] },
  ],
  defaultPool: 'shared',
  broadcastPool: 'bulk',
  organizations: { org_acme: { transactional: 'bulk' } },
  warmup: { google: [5, 10] },
};

describe('the sources file', () => {
  it('given no file, one source: the machine, unbound, no warm-up, nothing declared', () => {
    const policy = egressPolicyOf(loadConfig({}));
    expect(policy).toEqual(MACHINE_EGRESS);
    expect(policy.declared).toBe(false);
    expect(poolOf(policy, 'org_any', 'broadcast').sources).toEqual(['machine']);
    expect(policy.sources).toEqual([{ name: 'machine', weight: 1 }]);
  });

  it('given sources, pools and assignments: each lane of each organization has its pool', () => {
    // When
    const policy = egressPolicyOf(loadConfig({ SOURCES_FILE: file('valid.json', valid) }));
    // Then
    expect(policy.declared).toBe(true);
    expect(policy.sources).toEqual([
      {
        name: 'a',
        address: '192.0.2.10',
        helo: 'out-a.example.net',
        weight: 1,
        warmupStarted: '2026-11-28',
      },
      { name: 'b', address: '192.0.2.11', helo: 'out-b.example.net', weight: 3 },
      { name: 'c', address: '2001:db8::12', helo: 'out-c.example.net', weight: 1 },
    ]);
    expect(poolOf(policy, 'org_acme', 'transactional').name).toBe('bulk');
    expect(poolOf(policy, 'org_acme', 'broadcast').name).toBe('bulk');
    expect(poolOf(policy, 'org_other', 'transactional').name).toBe('shared');
    expect(poolOf(policy, 'org_other', 'broadcast').name).toBe('bulk');
    // The file's ramp replaces google's only.
    expect(policy.warmup).toEqual({ ...DEFAULT_WARMUP, google: [5, 10] });
  });

  it('given one pool and no defaultPool: that pool is every lane’s default', () => {
    const policy = parseSourcesFile({ sources, pools: [{ name: 'only', sources: ['a', 'b', 'c'] }] });
    expect([policy.defaultPool, policy.broadcastPool]).toEqual(['only', 'only']);
  });

  it.each([
    [
      { ...valid, sources: [{ ...sources[0], address: '192.0.2' }] },
      /^sources\[0\] \("a"\)\.address: is an IPv4/,
    ],
    [
      { ...valid, sources: [{ ...sources[0], helo: 'localhost' }] },
      /^sources\[0\] \("a"\)\.helo: is a fully/,
    ],
    [
      { ...valid, sources: [{ ...sources[0], warmup: { started: '28.11.2026' } }] },
      /^sources\[0\] \("a"\)\.warmup/,
    ],
    [{ ...valid, sources: [sources[0], { ...sources[1], name: 'a' }] }, /^sources: "a" is declared twice/],
    [
      { ...valid, sources: [sources[0], { ...sources[1], address: '192.0.2.10' }] },
      /address 192\.0\.2\.10 is declared twice/,
    ],
    [
      { ...valid, pools: [{ name: 'shared', sources: ['a', 'z'] }] },
      /^pools\[0\] \("shared"\)\.sources\[1\]: no source "z"/,
    ],
    [{ ...valid, defaultPool: undefined }, /^defaultPool: required when there are several pools/],
    [{ ...valid, broadcastPool: 'nope' }, /^broadcastPool: no pool "nope"/],
    [
      { ...valid, organizations: { org_acme: { broadcast: 'nope' } } },
      /^organizations\.org_acme\.broadcast: no pool "nope"/,
    ],
    [{ ...valid, organizations: { acme: {} } }, /^organizations\.acme: is an organization id/],
    [{ ...valid, warmup: { google: [-1] } }, /^warmup\.google\[0\]: /],
    [{ ...valid, extra: true }, /Unrecognized key/],
  ])('refuses a faulty file, naming the entry (%#)', (json, message) => {
    expect(() => parseSourcesFile(json)).toThrow(message);
  });

  it('stops start-up, naming SOURCES_FILE and the entry, on a faulty file; and on a missing or broken one', async () => {
    const config = loadConfig({
      SOURCES_FILE: file('faulty.json', { ...valid, pools: [{ name: 'shared', sources: ['x'] }] }),
    });
    await expect(startPostline(config)).rejects.toThrow(ConfigError);
    await expect(startPostline(config)).rejects.toThrow(
      /SOURCES_FILE: pools\[0\] \("shared"\)\.sources\[0\]: no source "x"/,
    );
    expect(() => loadConfig({ SOURCES_FILE: join(dir, 'missing.json') })).toThrow(/SOURCES_FILE/);
    expect(() => loadConfig({ SOURCES_FILE: file('broken.json', '{"sources": [') })).toThrow(/SOURCES_FILE/);
  });
});

describe('the warm-up schedule', () => {
  const at = (iso: string) => new Date(iso);

  it('counts days from the start, 1 on the first day (UTC)', () => {
    expect(warmupDay('2026-11-28', at('2026-11-28T00:00:00Z'))).toBe(1);
    expect(warmupDay('2026-11-28', at('2026-11-28T23:59:59Z'))).toBe(1);
    expect(warmupDay('2026-11-28', at('2026-11-29T00:00:00Z'))).toBe(2);
    expect(warmupDay('2026-11-28', at('2026-12-28T12:00:00Z'))).toBe(31);
    expect(warmupDay('2026-11-28', at('2026-11-27T12:00:00Z'))).toBe(0);
    expect(utcDay(at('2026-11-28T23:59:59Z'))).toBe('2026-11-28');
    expect(nextDayStart(at('2026-11-28T13:14:15Z'))).toEqual(at('2026-11-29T00:00:00Z'));
  });

  it('caps by the group’s ramp: 0 before the start, the day’s cap, then none after the ramp', () => {
    const schedule = { default: [20, 40], google: [5, 10, 15] };
    const cap = (group: string, iso: string) => warmupCap(schedule, group, '2026-11-28', at(iso));
    expect(cap('google', '2026-11-27T12:00:00Z')).toBe(0);
    expect(cap('google', '2026-11-28T12:00:00Z')).toBe(5);
    expect(cap('google', '2026-11-30T12:00:00Z')).toBe(15);
    expect(cap('google', '2026-12-01T12:00:00Z')).toBeNull();
    // A group the schedule does not name (a destination's own, mx:…) takes default's ramp.
    expect(cap('mx:mx.example.org', '2026-11-29T12:00:00Z')).toBe(40);
    expect(cap('mx:mx.example.org', '2026-11-30T12:00:00Z')).toBeNull();
    // A source without a warm-up has no cap.
    expect(warmupCap(schedule, 'google', undefined, at('2026-11-28T12:00:00Z'))).toBeNull();
  });

  it('ships a ramp of 30 days that never falls, the default group at four times the providers’', () => {
    for (const ramp of Object.values(DEFAULT_WARMUP)) {
      expect(ramp).toHaveLength(30);
      expect([...ramp].sort((x, y) => x - y)).toEqual(ramp);
    }
    expect(DEFAULT_WARMUP.google[0]).toBe(50);
    expect(DEFAULT_WARMUP.default[0]).toBe(200);
  });
});

describe('the weighted order of a pool’s sources', () => {
  it('puts each source first in proportion to its weight, and lists every source once', () => {
    const items = [
      { name: 'a', weight: 1 },
      { name: 'b', weight: 3 },
    ];
    // Draws spread evenly over [0, 1): a quarter of them fall to a.
    const firsts = Array.from({ length: 100 }, (_, i) => weightedOrder(items, () => i / 100)[0].name);
    expect(firsts.filter((n) => n === 'a')).toHaveLength(25);
    expect(weightedOrder(items, () => 0.99).map((s) => s.name)).toEqual(['b', 'a']);
    expect(weightedOrder(items, () => 0).map((s) => s.name)).toEqual(['a', 'b']);
  });
});
