import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { addTracking, TrackingTokens } from '../../domain/emails/tracking.ts';
import { purposeKey } from '../../platform/crypto.ts';

const secret = randomBytes(32).toString('base64');
const tokens = new TrackingTokens(secret, 'https://track.example');
const claim = { emailId: 'em_1', orgId: 'org_1', mode: 'live' } as any;
const clicks = { opens: false, clicks: true };

describe('click tracking', () => {
  it('rewrites http(s) links, keeps other schemes, and signs the original link', () => {
    const html = '<a class="b" href="https://x.example/?a=1&amp;b=2">x</a> <a href="mailto:a@b.c">m</a>';
    const out = addTracking(html, tokens, claim, clicks);
    const token = /href="https:\/\/track\.example\/t\/c\/([^"]+)"/.exec(out)?.[1];
    expect(token).toBeTruthy();
    expect(tokens.verify(token!.replace(/&amp;/g, '&'))?.url).toBe('https://x.example/?a=1&b=2');
    expect(out).toContain('href="mailto:a@b.c"');
  });

  it('signs the link the browser would open: every character reference in the href decoded', () => {
    const signed = (href: string) => {
      const out = addTracking(`<a href="${href}">x</a>`, tokens, claim, clicks);
      const token = /href="https:\/\/track\.example\/t\/c\/([^"]+)"/.exec(out)![1];
      return tokens.verify(token.replace(/&amp;/g, '&'))?.url;
    };
    for (const amp of ['&amp;', '&#38;', '&#x26;', '&AMP;'])
      expect(signed(`https://x.example/?a=1${amp}b=2`)).toBe('https://x.example/?a=1&b=2');
    expect(signed('https://x.example/caf&eacute;?q=&quot;a&quot;')).toBe('https://x.example/café?q="a"');
  });

  it('signs the link the browser would open: line breaks and tabs in it, and spaces after it, left out', () => {
    const signed = (href: string) => {
      const out = addTracking(`<a href="${href}">x</a>`, tokens, claim, clicks);
      const token = /href="https:\/\/track\.example\/t\/c\/([^"]+)"/.exec(out)![1];
      return tokens.verify(token.replace(/&amp;/g, '&'))?.url;
    };
    expect(signed('https://x.example/a/very/long/\r\n    path?q=1&amp;r=2 ')).toBe(
      'https://x.example/a/very/long/    path?q=1&r=2',
    );
    expect(signed('https://x.example/p?q=a\tb\n')).toBe('https://x.example/p?q=ab');
    expect(signed('https://x.example/p?q=a b')).toBe('https://x.example/p?q=a b');
  });

  it('leaves a link marked data-postline-untracked as it is, before or after its href', () => {
    const html =
      '<a href="https://p.example/unsubscribe/t" data-postline-untracked>u</a>' +
      '<a data-postline-untracked href="https://p.example/u2">v</a><a href="https://x.example/">x</a>';
    const out = addTracking(html, tokens, claim, clicks);
    expect(out).toContain('<a href="https://p.example/unsubscribe/t" data-postline-untracked>u</a>');
    expect(out).toContain('<a data-postline-untracked href="https://p.example/u2">v</a>');
    expect(out).not.toContain('href="https://x.example/"');
  });

  it('gets through a body of many unclosed <a tags and still rewrites the real link after them', () => {
    const html = `${'<a '.repeat(100_000)}<a href="https://x.example/">x</a>`;
    const out = addTracking(html, tokens, claim, clicks);
    expect(out).toContain('https://track.example/t/c/');
  });
});

describe('tracking tokens', () => {
  const link = {
    emailId: 'em_01jx0m4qk3',
    orgId: 'org_01jx0m4qk3',
    mode: 'live',
    url: 'https://x.example/a',
  } as const;

  it('are opaque: decoded, they show neither the organization, the email, the mode nor the link', () => {
    for (const token of [tokens.sign(link), tokens.sign({ ...link, url: undefined })]) {
      expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
      const decoded = Buffer.from(token, 'base64url').toString('latin1');
      for (const leak of ['org_', 'em_', 'live', 'x.example']) expect(decoded).not.toContain(leak);
    }
    expect(tokens.verify(tokens.sign(link))).toEqual(link);
    expect(tokens.verify(tokens.sign({ ...link, url: undefined }))).toEqual({ ...link, url: undefined });
  });

  it('refuse a token changed anywhere, cut short, or made under another secret key', () => {
    const token = tokens.sign(link);
    const bytes = Buffer.from(token, 'base64url');
    for (let i = 0; i < bytes.length; i += 7) {
      const changed = Buffer.from(bytes);
      changed[i] ^= 1;
      expect(tokens.verify(changed.toString('base64url'))).toBeNull();
    }
    expect(tokens.verify(bytes.subarray(0, 20).toString('base64url'))).toBeNull();
    expect(tokens.verify('')).toBeNull();
    const other = new TrackingTokens(randomBytes(32).toString('base64'), 'https://track.example');
    expect(other.verify(token)).toBeNull();
  });

  it('still verify the earlier format (base64url JSON and an HMAC), so links in mail already sent work', () => {
    const body = Buffer.from(JSON.stringify([link.emailId, link.orgId, 'live', link.url])).toString(
      'base64url',
    );
    const mac = createHmac('sha256', purposeKey(secret, 'postline tracking'))
      .update(body)
      .digest()
      .subarray(0, 16)
      .toString('base64url');
    expect(tokens.verify(`${body}.${mac}`)).toEqual(link);
    expect(tokens.verify(`${body}.${mac.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))}`)).toBeNull();
  });
});
