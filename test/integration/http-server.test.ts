import { type AddressInfo, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../support/service.ts';

// What reaches the server below the API: paths that do not decode, bytes that are not HTTP, time-outs. Sent over
// raw sockets, since an HTTP client would refuse to send most of it.
let svc: TestService;
let org: TestOrg;
let port: number;

beforeAll(async () => {
  svc = await startTestService({ env: { HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '2000' } });
  org = await svc.createOrg('pro');
  port = svc.postline.port!;
});
afterAll(() => svc?.close());

interface RawAnswer {
  status: number;
  head: string;
  body: any;
  /** The server closed the connection. */
  closed: boolean;
}

/**
 * Writes `chunks` to a fresh connection and collects the answer until the server closes the connection (every
 * request here says `Connection: close` or is one the server gives up on). With `hold`, the socket is left open
 * after writing: only the server can end the exchange.
 */
function raw(...chunks: (string | Buffer)[]): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (c) => received.push(c));
    socket.on('error', () => {}); // a reset after the answer: what was received counts
    socket.on('close', () => {
      const text = Buffer.concat(received).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const head = split < 0 ? text : text.slice(0, split);
      const bodyText = split < 0 ? '' : text.slice(split + 4);
      let body: any = bodyText;
      try {
        body = JSON.parse(bodyText);
      } catch {}
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), head, body, closed: true });
    });
    for (const c of chunks) socket.write(c);
  });
}

const request = (method: string, path: string, headers: string[] = [], body = '') =>
  `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer ${org.liveKey}\r\n${headers.map((h) => `${h}\r\n`).join('')}${body ? `Content-Length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n${body}`;

const expectShape = (a: RawAnswer, status: number, code: string) => {
  expect(a.status, a.head).toBe(status);
  expect(a.head).toMatch(/\r\ncontent-type: application\/json/i);
  expect(Object.keys(a.body)).toEqual(['error']);
  expect(Object.keys(a.body.error).sort()).toEqual(['code', 'message', 'type']);
  expect(a.body.error.code).toBe(code);
};

describe('paths that do not decode, or decode to text the stores cannot hold', () => {
  it('answers 400 malformed_request or 404, in the error shape, on every route', async () => {
    for (const [path, status, code] of [
      ['/v1/emails/%ff', 400, 'malformed_request'],
      ['/v1/templates/%E0%A4%A', 400, 'malformed_request'],
      ['/v1/emails/%ED%A0%80/events', 400, 'malformed_request'], // an encoded lone surrogate
      ['/v1/domains/a%00b', 404, 'route_not_found'],
      ['/v1/webhooks/wh_%00/deliveries', 404, 'route_not_found'],
      ['/%ff', 400, 'malformed_request'],
    ] as const) {
      for (const method of ['GET', 'PATCH', 'DELETE', 'POST']) {
        const a = await raw(request(method, path, ['Content-Type: application/json'], '{}'));
        expectShape(a, status, code);
      }
    }
  });
});

describe("Node's own answers", () => {
  it('bad framing, an unknown method, a NUL in a header, headers too large: 4xx in the error shape', async () => {
    expectShape(
      await raw(
        'POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      ),
      400,
      'malformed_request',
    );
    expectShape(
      await raw('GET /v1/api-keys HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'),
      400,
      'malformed_request',
    );
    expectShape(await raw('this is not http\r\n\r\n'), 400, 'malformed_request');
    expectShape(await raw('FROB /v1/api-keys HTTP/1.1\r\nHost: x\r\n\r\n'), 400, 'malformed_request');
    expectShape(
      await raw('GET /v1/api-keys HTTP/1.1\r\nHost: x\r\nX-Tag: a\u0000b\r\n\r\n'),
      400,
      'malformed_request',
    );
    expectShape(
      await raw(`GET /v1/api-keys HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
      431,
      'headers_too_large',
    );
  });

  it('an Expect it does not know: 417; CONNECT: 405; 100-continue goes on to the route', async () => {
    expectShape(
      await raw(request('POST', '/v1/api-keys', ['Expect: tea'], '{"name":"x"}')),
      417,
      'expectation_failed',
    );
    const connectAnswer = await raw('CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n');
    expectShape(connectAnswer, 405, 'method_not_allowed');
    const continued = await raw(
      request(
        'POST',
        '/v1/api-keys',
        ['Expect: 100-continue', 'Content-Type: application/json'],
        '{"name":"ok"}',
      ),
    );
    expect(continued.head).toMatch(/^HTTP\/1\.1 100 Continue/);
    // After the interim 100, the route's own answer.
    expect(continued.body).toMatch(/^HTTP\/1\.1 201 Created\r\n[\s\S]*"name":"ok"/);
  });

  it('methods Express does not route answer 405 with Allow, or 404, in the error shape', async () => {
    expectShape(await raw(request('PUT', '/v1/api-keys')), 405, 'method_not_allowed');
    expectShape(await raw(request('PROPFIND', '/v1/api-keys')), 405, 'method_not_allowed');
    expectShape(await raw(request('OPTIONS', '/v1/nowhere')), 404, 'route_not_found');
  });
});

describe('time-outs', () => {
  it('headers that never end are answered 408 and the connection closed', async () => {
    const a = await raw('GET /v1/api-keys HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n');
    expectShape(a, 408, 'request_timeout');
    expect(a.closed).toBe(true);
  });

  it('a body that never arrives is answered 408 and the connection closed', async () => {
    const a = await raw(
      `POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.liveKey}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`,
    );
    expectShape(a, 408, 'request_timeout');
    expect(a.closed).toBe(true);
  });
});

describe('where the server listens', () => {
  it('on every interface by default, on HOST when set', async () => {
    expect((svc.postline.server!.address() as AddressInfo).address).toBe('0.0.0.0');
    const local = await startTestService({ env: { HOST: '127.0.0.1' } });
    try {
      expect((local.postline.server!.address() as AddressInfo).address).toBe('127.0.0.1');
      expect((await local.client().get('/healthz')).status).toBe(200);
    } finally {
      await local.close();
    }
  });
});
