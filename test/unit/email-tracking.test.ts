import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { addTracking, TrackingTokens } from '../../write-side/emails/tracking.ts';

const tokens = new TrackingTokens(randomBytes(32).toString('base64'), 'https://track.example');
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
