import { describe, expect, it } from 'vitest';
import { asciiDomain, formatMailbox, parseMailbox } from '../../domain/emails/addresses.ts';
import { addTracking, TrackingTokens } from '../../domain/emails/tracking.ts';
import { monthOf } from '../../domain/organizations/plans.ts';
import { simulatedOutcome } from '../../processes/simulator/simulator-plan.ts';

describe('addresses', () => {
  it.each([
    ['ann@example.org', { name: null, address: 'ann@example.org' }],
    ['Ann Lee <ann@Example.ORG>', { name: 'Ann Lee', address: 'ann@example.org' }],
    ['"Lee, Ann" <ann@example.org>', { name: 'Lee, Ann', address: 'ann@example.org' }],
    ['jürgen@bücher.example', { error: expect.stringContaining('local part') }],
    ['j@bücher.example', { name: null, address: 'j@xn--bcher-kva.example' }],
    ['"odd local"@example.org', { name: null, address: '"odd local"@example.org' }],
    ['a.b+tag@sub.example.co', { name: null, address: 'a.b+tag@sub.example.co' }],
    ['ann@localhost', { error: expect.stringContaining('domain') }],
    ['ann@123.123', { error: expect.stringContaining('domain') }],
    ['.ann@example.org', { error: expect.stringContaining('local part') }],
    ['ann@exa_mple.org', { error: expect.stringContaining('domain') }],
    ['Ann <ann@example.org>\r\nBcc: x@y.org', { error: expect.stringContaining('line breaks') }],
    [`${'a'.repeat(65)}@example.org`, { error: expect.stringContaining('64') }],
  ])('%s', (raw, expected) => expect(parseMailbox(raw)).toEqual(expected));

  it('gives the same answer for a domain seen before (they are remembered), valid or not', () => {
    for (let i = 0; i < 2; i++) {
      expect(asciiDomain('Bücher.Example')).toBe('xn--bcher-kva.example');
      expect(asciiDomain('exa_mple.org')).toBeNull();
    }
  });

  it('quotes display names with specials when writing them back', () => {
    expect(formatMailbox({ name: 'Lee, Ann', address: 'a@b.org' })).toBe('"Lee, Ann" <a@b.org>');
    expect(formatMailbox({ name: 'Zoë', address: 'a@b.org' })).toBe('Zoë <a@b.org>');
    expect(formatMailbox({ name: 'Say "hi"', address: 'a@b.org' })).toBe('"Say \\"hi\\"" <a@b.org>');
  });
});

describe('monthOf', () => {
  it.each([
    ['2026-11-30T23:59:59.999Z', '2026-11'],
    ['2026-11-30T23:30:00-01:00', '2026-12'],
    ['2026-12-01T00:30:00+01:00', '2026-11'],
    [new Date(Date.UTC(2027, 0, 1)), '2027-01'],
  ])('%s is in %s (UTC)', (at, month) => expect(monthOf(at)).toBe(month));
});

describe('tracking tokens', () => {
  const tokens = new TrackingTokens(Buffer.alloc(32, 7).toString('base64'), 'https://t.example/');
  const claim = { emailId: 'em_1', orgId: 'org_1', mode: 'live' as const };

  it('round-trips a signed claim and refuses a changed one', () => {
    const t = tokens.sign({ ...claim, url: 'https://a.example/x' });
    expect(tokens.verify(t)).toEqual({ ...claim, url: 'https://a.example/x' });
    // A claim in the earlier format, written by someone without the key, with the token's tail as its MAC.
    const forged = Buffer.from(JSON.stringify(['em_1', 'org_1', 'live', 'https://evil.example'])).toString(
      'base64url',
    );
    expect(tokens.verify(`${forged}.${t.slice(-22)}`)).toBeNull();
    // A character inside the token (the last one may carry only padding bits) changed.
    expect(tokens.verify(`${t.slice(0, 10)}${t[10] === 'A' ? 'B' : 'A'}${t.slice(11)}`)).toBeNull();
    expect(tokens.verify('garbage')).toBeNull();
    const other = new TrackingTokens(Buffer.alloc(32, 8).toString('base64'), 'https://t.example');
    expect(other.verify(t)).toBeNull();
  });

  it('rewrites http(s) links and adds a pixel; leaves mailto and anchors alone', () => {
    const html =
      '<body><a href="https://a.example/?x=1&amp;y=2">a</a> <a href=\'mailto:x@y.org\'>m</a> <a href="#top">t</a></body>';
    const out = addTracking(html, tokens, claim, { opens: true, clicks: true });
    const link = /href="https:\/\/t\.example\/t\/c\/([^"]+)"/.exec(out)![1];
    expect(tokens.verify(link)?.url).toBe('https://a.example/?x=1&y=2');
    expect(out).toContain("href='mailto:x@y.org'");
    expect(out).toContain('href="#top"');
    expect(out).toMatch(/<img src="https:\/\/t\.example\/t\/o\/[^"]+\.gif"[^>]*\/><\/body>$/);
    expect(addTracking(html, tokens, claim, { opens: false, clicks: false })).toBe(html);
  });
});

describe('test-mode simulator plan', () => {
  it.each([
    ['delivered@simulator.postline.dev', ['delivered']],
    ['delivered+x@simulator.postline.dev', ['delivered']],
    ['Bounced+a@Simulator.Postline.dev', ['bounced']],
    ['complained@simulator.postline.dev', ['delivered', 'complained']],
    ['delayed+1@simulator.postline.dev', ['delayed', 'delivered']],
    ['opened@simulator.postline.dev', ['delivered', 'opened']],
    ['clicked+a@simulator.postline.dev', ['delivered', 'opened', 'clicked']],
    ['bounced@example.org', ['delivered']],
    ['anyone@simulator.postline.dev', ['delivered']],
  ])('%s', (address, kinds) => expect(simulatedOutcome(address).map((s) => s.kind)).toEqual(kinds));
});
