import { createRequire } from 'node:module';
import { pino } from 'pino';
import type PinoPretty from 'pino-pretty';
import { loggableError } from './loggable-error.ts';

export type Logger = pino.Logger;

/**
 * Secrets never reach the log: keys, auth headers and secrets are redacted wherever they appear. Neither does
 * personal data that errors carry (PostgreSQL's detail and context quote the failing statement's data): an error
 * logged as `err` or `error` keeps only its safe fields (platform/loggable-error.ts). `destination`: where the
 * lines go (standard output unless given). `format`: JSON lines, or lines for a person (`pretty`; `auto` is
 * pretty when standard output is a terminal).
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  format: LogFormat = 'json',
): Logger {
  const human = format === 'pretty' || (format === 'auto' && !destination && process.stdout.isTTY === true);
  return pino(
    {
      level,
      serializers: { err: loggableError, error: loggableError },
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
    },
    human
      ? prettyLines({
          destination: destination ?? 1,
          colorize: format === 'auto',
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname',
          singleLine: true,
          sync: true,
        })
      : destination,
  );
}

/** pino-pretty, loaded when a person reads the log (about 50 modules a JSON log never needs). */
const prettyLines = (options: PinoPretty.PrettyOptions): PinoPretty.PrettyStream =>
  createRequire(import.meta.url)('pino-pretty')(options);

export type LogFormat = 'auto' | 'json' | 'pretty';
