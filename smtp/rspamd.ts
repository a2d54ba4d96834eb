import type { Readable } from 'node:stream';
import { request } from 'undici';
import type { Logger } from '../platform/logger.ts';

/** How long the MX waits for rspamd before it scores the message itself. */
const RSPAMD_TIMEOUT_MS = 5000;

/**
 * rspamd's score for a message (`POST /checkv2` of its normal worker, with the envelope and the client in the
 * headers rspamd reads), or null when rspamd does not answer in time: then Postline's own score stands
 * (docs/receiving.md). No scorer without RSPAMD_URL.
 */
export function rspamdScorer(url: string | undefined, log: Logger) {
  if (!url) return null;
  return async (
    raw: Readable,
    arrival: { ip: string; helo: string; mailFrom: string; rcptTo: string[]; hostname: string },
  ): Promise<number | null> => {
    try {
      const res = await request(`${url.replace(/\/$/, '')}/checkv2`, {
        method: 'POST',
        body: raw,
        headers: {
          IP: arrival.ip,
          Helo: arrival.helo,
          From: arrival.mailFrom,
          Rcpt: arrival.rcptTo.join(','),
          MTA: arrival.hostname,
        },
        headersTimeout: RSPAMD_TIMEOUT_MS,
        bodyTimeout: RSPAMD_TIMEOUT_MS,
      });
      const answer = (await res.body.json()) as { score?: unknown };
      if (res.statusCode !== 200 || typeof answer.score !== 'number')
        throw new Error(`rspamd answered ${res.statusCode}`);
      return answer.score;
    } catch (err) {
      raw.destroy(); // what rspamd left unread
      log.warn({ err }, 'rspamd did not score the message; Postline scored it');
      return null;
    }
  };
}
