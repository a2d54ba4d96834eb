import { once } from 'node:events';
import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { Duplex } from 'node:stream';
import type express from 'express';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';

/** The answer Node's parser or timers cut short, in the API's error shape. */
function clientErrorOf(error: Error & { code?: string }): AppError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('request_timeout', 'The request did not arrive in time; the connection is closed.');
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('headers_too_large', 'The request headers are too large.');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new AppError('body_too_large', 'The chunk extensions of the request body are too large.');
    case 'HPE_INVALID_METHOD':
      return new AppError('malformed_request', 'The request method is not one HTTP knows.');
    default:
      return new AppError('malformed_request', 'The request is not valid HTTP/1.1.');
  }
}

/** A whole HTTP/1.1 response carrying `error`, for a socket Node gave up parsing; the connection closes after it. */
export function rawErrorResponse(error: AppError): string {
  const body = JSON.stringify(error.toJSON());
  const head = [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(error.headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return `${head.join('\r\n')}\r\n\r\n${body}`;
}

function answer(res: ServerResponse, error: AppError) {
  const body = JSON.stringify(error.toJSON());
  res.writeHead(error.status, {
    ...error.headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

/**
 * The API's HTTP server. Every answer Node gives by itself (bad framing, an unknown method, headers too large, a
 * request cut off by a time-out, an `Expect` it does not know, CONNECT) has the error shape `{error:{…}}`, as
 * long as the socket can still carry one. A request whose headers are not in after HTTP_HEADERS_TIMEOUT_MS, or
 * that is not wholly received after HTTP_REQUEST_TIMEOUT_MS, is answered 408 and its connection closed, so a
 * client that never sends cannot hold a connection for long.
 */
export async function listenHttp(app: express.Express, config: Config): Promise<Server> {
  const requestTimeout = config.HTTP_REQUEST_TIMEOUT_MS;
  const headersTimeout = Math.min(config.HTTP_HEADERS_TIMEOUT_MS, requestTimeout); // Node wants ≤
  const server = createServer(
    {
      requestTimeout,
      headersTimeout,
      // How often Node looks for requests past their time-out: often enough that they end close to it.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeout / 4))),
    },
    app,
  );
  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => {
    const pending = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || pending?.headersSent) {
      socket.destroy();
      return;
    }
    socket.end(rawErrorResponse(clientErrorOf(error)));
  });
  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    answer(
      res,
      new AppError('expectation_failed', 'The only expectation supported is Expect: 100-continue.'),
    );
  });
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.end(
      rawErrorResponse(
        new AppError('method_not_allowed', 'CONNECT is not supported.', {
          Allow: 'GET, POST, PATCH, DELETE',
        }),
      ),
    );
  });
  server.listen(config.PORT, config.HOST);
  await once(server, 'listening');
  return server;
}
