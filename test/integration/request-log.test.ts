import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

/**
 * The request log, as the service writes it: one line per request with its path, never a capability the path
 * carries (an unsubscribe link's token, an open pixel's or a click's tracking token). Whoever reads the logs
 * could otherwise unsubscribe the people in them, or record opens and clicks in their name.
 */

const lines: string[] = [];
const destination = new Writable({
  write(chunk, _encoding, done) {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    done();
  },
});
const svc = useTestService({ log: createLogger('info', destination) });
const requestLines = () => lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');

let org: TestOrg;
let unsubscribe: string;
let open: string;
let click: string;
beforeAll(async () => {
  org = await svc.createOrg('pro');
  const tokens = svc.postline.services.tokens;
  unsubscribe = tokens.unsubscribe.sign('em_0123456789abcdefghijklmnop');
  const claim = { emailId: 'em_0123456789abcdefghijklmnop', orgId: org.orgId, mode: 'live' as const };
  open = tokens.tracking.sign(claim);
  click = tokens.tracking.sign({ ...claim, url: 'https://example.org/offer' });
});

/** A request written as given, in absolute form (`GET http://host/path`), which routes like its path. */
function absoluteForm(path: string): Promise<string> {
  const { port, hostname } = new URL(svc.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () =>
      socket.write(`GET ${svc.baseUrl}${path} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`),
    );
    let answer = '';
    socket.on('data', (d) => (answer += d));
    socket.on('end', () => resolve(answer.split('\r\n')[0]));
    socket.on('error', reject);
  });
}

describe('the request log', () => {
  it('names capability paths without their tokens, and every other path as it is', async () => {
    const get = async (path: string, method = 'GET') => {
      const r = await request(`${svc.baseUrl}${path}`, { method: method as 'GET' });
      await r.body.dump();
      return r.statusCode;
    };
    const sent = lines.length;
    // Each route as its link is written, and as the router also takes it (case, trailing slash, more slashes).
    expect(await get(`/unsubscribe/${unsubscribe}`)).toBe(404); // a token for no email: the page says so
    expect(await get(`/unsubscribe/${unsubscribe}`, 'POST')).toBe(404);
    expect(await get(`/t/o/${open}.gif`)).toBe(200);
    expect(await get(`/t/c/${click}`)).toBe(302);
    expect(await get(`/T/C/${click}/`)).toBe(302);
    expect(await get(`/Unsubscribe/${unsubscribe.toUpperCase()}`)).toBe(404);
    // Paths that route nowhere carry the token all the same.
    expect(await get(`/unsubscribe/${unsubscribe}/more`)).toBe(404);
    expect(await get(`//t/c/${click}`)).toBe(404);
    expect(await get(`/%74/c/${click}`)).toBe(404);
    expect(await get(`/t/c/${click}%zz`)).toBe(400);
    expect(await absoluteForm(`/t/c/${click}`)).toMatch(/^HTTP\/1\.1 302/);
    expect((await org.live.get('/v1/api-keys')).status).toBe(200);
    expect(await get('/healthz')).toBe(200);

    const logged = lines.slice(sent).join('\n');
    for (const token of [unsubscribe, open, click])
      for (const shown of [token, token.toUpperCase(), token.slice(0, 16), token.slice(-16)])
        expect(logged).not.toContain(shown);
    expect(
      requestLines()
        .slice(-13)
        .map((l) => l.path),
    ).toEqual([
      '/unsubscribe/[redacted]',
      '/unsubscribe/[redacted]',
      '/t/o/[redacted]',
      '/t/c/[redacted]',
      '/T/C/[redacted]',
      '/Unsubscribe/[redacted]',
      '/unsubscribe/[redacted]',
      '//t/c/[redacted]',
      '/%74/c/[redacted]',
      '/t/c/[redacted]',
      '/t/c/[redacted]',
      '/v1/api-keys',
      '/healthz',
    ]);
  });
});
