/**
 * Headers Postline writes itself (addressing, MIME structure, signatures, tracing): a custom header may not
 * set or override them. `X-Postline-*` is reserved too.
 */
export const OWNED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'reply-to',
  'sender',
  'subject',
  'date',
  'message-id',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
  'content-id',
  'dkim-signature',
  'arc-seal',
  'arc-message-signature',
  'arc-authentication-results',
  'authentication-results',
  'return-path',
  'received',
  'delivered-to',
]);
