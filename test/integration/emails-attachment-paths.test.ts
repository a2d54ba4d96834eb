import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMAIL_LIMITS } from '../../domain/emails/limits.ts';
import { fetchRemoteFile, RemoteFileError } from '../../platform/remote-file.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

/**
 * Attachments given by `path` (Resend's field): the file is fetched from its URL when the email is accepted, here
 * from a real HTTP server on loopback, which this service may reach (ATTACHMENT_PATHS_ALLOW_PRIVATE_NETWORKS); the
 * default refuses it (docs/emails.md, "Attachments").
 */
const svc = useTestService({
  env: { ATTACHMENT_PATHS_ALLOW_PRIVATE_NETWORKS: 'true', ATTACHMENT_PATHS_TIMEOUT_MS: '1000' },
});
const SIM = 'delivered@simulator.postline.dev';
const PDF = Buffer.from('%PDF-1.4 the invoice');
let files: Server;
/** The headers of each request the file server got. */
const seen: Record<string, unknown>[] = [];
let base: string;
let acme: TestOrg;

beforeAll(async () => {
  files = createServer((req, res) => {
    seen.push(req.headers);
    const path = new URL(req.url!, 'http://x').pathname;
    if (path === '/files/Invoice%2042.pdf' || path === '/files/raw' || path.startsWith('/named/'))
      return void res.end(PDF);
    if (path === '/moved') return void res.writeHead(302, { location: '/files/raw' }).end();
    if (path === '/loop') return void res.writeHead(301, { location: '/loop' }).end();
    if (path === '/elsewhere') return void res.writeHead(307, { location: 'ftp://files.test/raw' }).end();
    if (path === '/big') {
      // One byte more than an email's attachments may hold in all, in chunks.
      const chunk = Buffer.alloc(1024 * 1024);
      let left = EMAIL_LIMITS.attachmentBytes + 1;
      res.writeHead(200);
      const more = () => {
        while (left > 0) {
          const piece = chunk.subarray(0, Math.min(chunk.length, left));
          left -= piece.length;
          if (!res.write(piece)) return void res.once('drain', more);
        }
        res.end();
      };
      return more();
    }
    if (path === '/slow') return; // never answers
    res.writeHead(404).end('no such file');
  });
  files.listen(0, '127.0.0.1');
  await once(files, 'listening');
  base = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  acme = await svc.createOrg('pro');
});
afterAll(async () => {
  files.closeAllConnections();
  files.close();
});

const send = (attachments: unknown[]) =>
  acme.test.post('/v1/emails', { from: 'a@acme.test', to: SIM, subject: 'Invoice', text: 'x', attachments });
const listed = async (id: string) =>
  (await acme.test.get(`/v1/emails/${id}/attachments`)).body.data.map((a: any) => [
    a.filename,
    a.content_type,
    a.size,
  ]);

describe('an attachment given by path', () => {
  it('is fetched (a redirect followed) and kept as the email’s, named after its URL unless it has a name', async () => {
    const r = await send([
      { path: `${base}/files/Invoice%2042.pdf?signature=abc` },
      { path: `${base}/moved`, filename: 'copy.pdf', content_type: 'application/octet-stream' },
      { filename: 'note.txt', content: Buffer.from('hi').toString('base64') },
    ]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await listed(r.body.id)).toEqual([
      ['Invoice 42.pdf', 'application/pdf', PDF.length],
      ['copy.pdf', 'application/octet-stream', PDF.length],
      ['note.txt', 'text/plain', 2],
    ]);
    const first = (await acme.test.get(`/v1/emails/${r.body.id}/attachments`)).body.data[0];
    const one = await acme.test.get(`/v1/emails/${r.body.id}/attachments/${first.id}`);
    const url = new URL(one.body.download_url);
    const download = await fetch(`${svc.baseUrl}${url.pathname}${url.search}`);
    expect(Buffer.from(await download.arrayBuffer())).toEqual(PDF);
  });

  it('comes through Resend’s SDK', async () => {
    const resend = new Resend(acme.testKey, { baseUrl: `${svc.baseUrl}/v1` });
    const sent = await resend.emails.send({
      from: 'a@acme.test',
      to: SIM,
      subject: 'Invoice',
      text: 'x',
      attachments: [{ path: `${base}/files/raw`, filename: 'invoice.pdf' }],
    });
    expect(sent.error).toBeNull();
    expect(await listed(sent.data!.id)).toEqual([['invoice.pdf', 'application/pdf', PDF.length]]);
  });

  it.each([
    [
      { path: '/files/raw', content: 'aGk=', filename: 'a.txt' },
      'attachments[0].path',
      'give content or path, not both',
    ],
    [{ filename: 'a.txt' }, 'attachments[0].content', 'is required (or path)'],
    [{ path: 'ftp://files.test/a.txt' }, 'attachments[0].path', 'must be an http or https URL'],
    [{ path: '/missing' }, 'attachments[0].path', 'answered HTTP 404'],
    [{ path: '/loop' }, 'attachments[0].path', 'was redirected more than 3 times'],
    [{ path: '/elsewhere' }, 'attachments[0].path', 'must be an http or https URL'],
    [{ path: '/slow' }, 'attachments[0].path', 'did not answer in full within 1 s'],
    [
      { path: '/big' },
      'attachments',
      `must be at most ${EMAIL_LIMITS.attachmentBytes / 1024 / 1024} MB in all`,
    ],
  ])('refuses %j, naming %s, and records nothing', async (attachment, field, message) => {
    const before = (await acme.test.get('/v1/emails?limit=100')).body.data.length;
    const given = {
      ...attachment,
      ...('path' in attachment && attachment.path.startsWith('/') && { path: `${base}${attachment.path}` }),
    };
    const r = await send([given]);
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'validation_error' });
    expect(r.body.error.message).toContain(`\`${field}\`: ${message}`);
    expect((await acme.test.get('/v1/emails?limit=100')).body.data.length).toBe(before);
  });
});

describe('hostile values in an attachment’s path', () => {
  it.each([
    ['a NUL', () => `${base}/files/raw\u0000`],
    ['a lone surrogate', () => `${base}/files/raw\ud800`],
    ['a URL past 2048 characters', () => `${base}/${'a'.repeat(2100)}`],
    ['a nested value', () => ({ url: { href: [`${base}/files/raw`] } })],
    ['a number', () => 42],
  ])('refuses %s with 422 naming attachments[0].path, and records nothing', async (_, path) => {
    const before = (await acme.test.get('/v1/emails?limit=100')).body.data.length;
    const r = await send([{ path: path() }]);
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.error.code).toBe('validation_error');
    expect(r.body.error.message).toContain('`attachments[0].path`');
    expect((await acme.test.get('/v1/emails?limit=100')).body.data.length).toBe(before);
  });

  it('sends no header a line break in the URL would write', async () => {
    seen.length = 0;
    const r = await send([{ path: `${base}/files/raw\r\nX-Injected: yes` }]);
    // The URL's parser drops the line break (WHATWG): the request asks for a path with no such file.
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.error.message).toContain('`attachments[0].path`: answered HTTP 404');
    expect(seen).toHaveLength(1);
    expect(seen.some((h) => 'x-injected' in h)).toBe(false);
  });

  it('names the file after its URL without slashes, NUL or line breaks', async () => {
    const r = await send([{ path: `${base}/named/..%2F..%2Fetc%00%0Apasswd` }]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await listed(r.body.id)).toEqual([['.._.._etc__passwd', 'application/octet-stream', PDF.length]]);
  });
});

describe('fetching a file a user names by URL', () => {
  it('reaches only public addresses unless private networks are allowed', async () => {
    const limits = { maxBytes: 1024, timeoutMs: 2000, allowPrivateNetworks: false };
    for (const url of [`${base}/files/raw`, base.replace('127.0.0.1', 'localhost') + '/files/raw']) {
      const refused = await fetchRemoteFile(url, limits).catch((e) => e);
      expect(refused).toBeInstanceOf(RemoteFileError);
      expect(refused.message).toMatch(/^blocked: .* resolves to (127\.0\.0\.1|::1) \(loopback\)/);
    }
    expect(await fetchRemoteFile(`${base}/files/raw`, { ...limits, allowPrivateNetworks: true })).toEqual(
      PDF,
    );
  });
});
