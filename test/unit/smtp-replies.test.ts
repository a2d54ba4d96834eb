import { describe, expect, it } from 'vitest';
import { AppError, ERROR_CATALOGUE, ERROR_REPLIES, type ErrorCode } from '../../platform/errors.ts';
import { REPLIES, replyForError } from '../../smtp/replies.ts';

/**
 * Every error of the command path and the reply the relay gives for it. What a retry may cure (the database
 * away, a time-out, a rate limit, the quota of the month, shutting down, the same key still in flight) is a
 * 4xx, so that the client's MTA keeps the message and sends it again; only what no retry changes is a 5xx.
 */
const EXPECTED: Record<ErrorCode, `${number} ${string}`> = {
  malformed_json: '550 5.6.0',
  unsupported_content_type: '550 5.6.0',
  body_too_large: '552 5.3.4',
  invalid_header: '550 5.6.0',
  invalid_batch: '550 5.6.0',
  malformed_request: '550 5.6.0',
  request_timeout: '451 4.3.2',
  expectation_failed: '550 5.6.0',
  headers_too_large: '550 5.6.0',
  missing_api_key: '535 5.7.8',
  invalid_api_key: '535 5.7.8',
  invalid_admin_token: '535 5.7.8',
  invalid_metrics_token: '535 5.7.8',
  insufficient_permission: '550 5.7.1',
  domain_not_allowed: '550 5.7.1',
  test_mode_only: '550 5.7.1',
  not_found: '550 5.6.0',
  route_not_found: '550 5.6.0',
  method_not_allowed: '550 5.6.0',
  content_deleted: '550 5.6.0',
  conflict: '550 5.7.0',
  concurrent_modification: '451 4.3.0',
  idempotency_key_reused: '550 5.7.0',
  idempotency_request_in_flight: '451 4.3.0',
  domain_exists: '550 5.7.0',
  email_not_scheduled: '550 5.7.0',
  contact_exists: '550 5.7.0',
  broadcast_not_draft: '550 5.7.0',
  broadcast_not_scheduled: '550 5.7.0',
  webhook_inactive: '550 5.7.0',
  validation_error: '550 5.6.0',
  plan_limit_exceeded: '550 5.6.0',
  template_not_published: '550 5.6.0',
  template_render_error: '550 5.6.0',
  domain_not_verified: '550 5.7.1',
  all_recipients_suppressed: '550 5.6.0',
  all_recipients_unsubscribed: '550 5.6.0',
  rate_limit_exceeded: '451 4.7.0',
  monthly_quota_exceeded: '451 4.7.0',
  internal_error: '451 4.3.0',
  projection_timeout: '451 4.3.2',
  service_unavailable: '451 4.3.2',
  database_unavailable: '451 4.3.0',
  shutting_down: '451 4.3.2',
};

const replyTo = (code: ErrorCode) => {
  const reply = replyForError(new AppError(code, `the API's message for ${code}`));
  return { code: reply.responseCode, text: reply.message };
};

/** Errors a retry may cure: on HTTP a 5xx or 429, or a conflict that is gone once the other request is. */
const curedByRetry = (code: ErrorCode) =>
  ERROR_CATALOGUE[code][0] >= 500 ||
  ERROR_CATALOGUE[code][0] === 429 ||
  code === 'idempotency_request_in_flight' ||
  code === 'concurrent_modification' ||
  code === 'request_timeout';

describe('the relay’s reply for each error', () => {
  it.each(Object.entries(EXPECTED) as [ErrorCode, string][])('%s → %s', (code, expected) => {
    const { code: reply, text } = replyTo(code);
    expect(`${reply} ${text.slice(0, 5)}`).toBe(expected);
  });

  it('covers every error of the catalogue, temporary exactly where a retry may cure it', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(Object.keys(ERROR_CATALOGUE).sort());
    for (const code of Object.keys(ERROR_CATALOGUE) as ErrorCode[])
      expect([code, Math.floor(replyTo(code).code / 100)]).toEqual([code, curedByRetry(code) ? 4 : 5]);
  });

  it('says why a permanent refusal was made, and gives its own text for a temporary one', () => {
    expect(replyTo('domain_not_verified').text).toBe("5.7.1 the API's message for domain_not_verified");
    expect(replyTo('idempotency_request_in_flight').text).toBe(`4.3.0 ${REPLIES.inFlight[2]}`);
    expect(replyTo('database_unavailable').text).toBe(`4.3.0 ${REPLIES.storageFailure[2]}`);
    // Anything not from the catalogue (a bug, a driver's error) is the 451 that loses nothing.
    expect(replyForError(new Error('boom')).responseCode).toBe(451);
  });
});

describe('replies an error shares with the protocol', () => {
  it('are the same bytes in both catalogues', () => {
    expect(ERROR_REPLIES.messageTooBig).toEqual(REPLIES.messageTooBig);
    expect(ERROR_REPLIES.storageFailure).toEqual(REPLIES.storageFailure);
    expect(ERROR_REPLIES.authFailed).toEqual(REPLIES.authFailed);
  });
});
