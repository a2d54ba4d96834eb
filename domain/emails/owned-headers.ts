/**
 * Headers Postline writes itself (addressing, MIME structure, signatures, tracing): a custom header may not
 * set or override them. Every `Content-*` (they describe the MIME part the header block heads, which Postline
 * builds), every `ARC-*` and every `X-Postline-*` is reserved too (`isOwnedHeader`).
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

const OWNED_PREFIXES = ['content-', 'arc-', 'x-postline-'];

/** Whether a custom header of this name (lower case) would set or override one of Postline's. */
export const isOwnedHeader = (lower: string) =>
  OWNED_HEADERS.has(lower) || OWNED_PREFIXES.some((p) => lower.startsWith(p));
