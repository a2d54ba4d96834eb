import { pino } from 'pino';
import pretty from 'pino-pretty';
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
      ? pretty({
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

export type LogFormat = 'auto' | 'json' | 'pretty';
