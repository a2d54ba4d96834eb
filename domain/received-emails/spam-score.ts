import type { Authentication } from './received-email.events.ts';

/** What the score looks at besides the authentication verdicts. */
export interface SpamSignals {
  authentication: Authentication;
  hasFrom: boolean;
  hasDate: boolean;
  hasMessageId: boolean;
  subject: string | null;
  hasText: boolean;
  hasHtml: boolean;
}

/**
 * Postline's own spam score (docs/receiving.md lists the rules): points for what fails authentication and for
 * what honest mail software always writes but the message lacks. It is a rough signal, not a filter; 0 is
 * clean, and a message at or above INBOUND_SPAM_THRESHOLD (5 by default) is `is_spam`.
 */
export function spamScore(s: SpamSignals): number {
  const { spf, dkim, dmarc } = s.authentication;
  let score = 0;
  if (spf.result === 'fail') score += 2;
  else if (spf.result === 'softfail') score += 1;
  if (dkim.result === 'fail') score += 1.5;
  if (dmarc.result === 'fail') score += 3;
  if (!s.hasFrom) score += 2;
  if (!s.hasDate) score += 0.5;
  if (!s.hasMessageId) score += 1;
  if (!s.subject?.trim()) score += 0.5;
  else if (/[A-Z]/.test(s.subject) && s.subject === s.subject.toUpperCase() && s.subject.length > 10)
    score += 1;
  if (s.hasHtml && !s.hasText) score += 0.5;
  return score;
}
