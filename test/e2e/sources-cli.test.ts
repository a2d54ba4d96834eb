import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_WARMUP } from '../../domain/delivery/egress-warmup.ts';
import { runCli, useServiceEnv } from '../support/process.ts';

/**
 * `postline sources` as an operator runs it, SOURCES_FILE read from the environment: without a file the machine's
 * one source; with one, its sources and warm-up; a faulty file refused, naming the entry. What the sources do to
 * delivery is held in test/integration/egress-pools.test.ts.
 */
const setup = useServiceEnv();
const dir = mkdtempSync(join(tmpdir(), 'postline-sources-cli-'));
const file = (name: string, json: unknown) => {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(json));
  return path;
};
const today = new Date().toISOString().slice(0, 10);

describe('postline sources', () => {
  it('lists the machine’s source without a file, the file’s sources with it, and refuses a faulty file', async () => {
    const machine = await runCli(['sources'], setup.env);
    expect(machine.code, machine.stderr).toBe(0);
    expect(machine.stdout).toContain('No SOURCES_FILE');
    expect(machine.stdout).toMatch(/^machine +machine +\(not bound\) +\(host name\) +1 +none$/m);

    const SOURCES_FILE = file('sources.json', {
      sources: [
        { name: 'new', address: '192.0.2.10', helo: 'new.mail.example.net', warmup: { started: today } },
        { name: 'old', address: '192.0.2.11', helo: 'old.mail.example.net' },
      ],
      pools: [{ name: 'main', sources: ['new', 'old'] }],
    });
    const listed = await runCli(['sources', '--json'], { ...setup.env, SOURCES_FILE });
    expect(listed.code, listed.stderr).toBe(0);
    const rows = listed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => [r.source, r.pools, r.address, r.warmup?.started ?? null])).toEqual([
      ['new', ['main'], '192.0.2.10', today],
      ['old', ['main'], '192.0.2.11', null],
    ]);
    // Day 1, or 2 when the run crossed midnight (UTC) since `today`.
    const day = rows[0].warmup.day;
    expect([1, 2]).toContain(day);
    expect(rows[0].groups).toContainEqual({ group: 'google', cap: DEFAULT_WARMUP.google[day - 1], used: 0 });
    expect(rows[0].groups).toContainEqual({
      group: 'default',
      cap: DEFAULT_WARMUP.default[day - 1],
      used: 0,
    });

    const faulty = file('faulty.json', {
      sources: [{ name: 'x', address: 'nowhere', helo: 'x.example.net' }],
    });
    const refused = await runCli(['sources'], { ...setup.env, SOURCES_FILE: faulty });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('SOURCES_FILE: sources[0] ("x").address: is an IPv4 or IPv6 address');
  });
});
