/**
 * Whether `error` says the database cannot be reached or the connection was lost, rather than anything about the
 * statement: the request may succeed when retried once the database is back (HTTP answers 503
 * `database_unavailable`, background loops back off and try again). Looks through `cause` chains.
 *
 * - Errors PostgreSQL sends with severity FATAL or PANIC end the session (a terminated backend, a server shutting
 *   down or starting up, no free connection slot, a database that does not accept connections).
 * - SQLSTATE class 08 (connection exception), 57P01–57P03 (admin/crash shutdown, cannot connect now) and 53300
 *   (too many connections).
 * - Socket errors of the connection (ECONNREFUSED, ECONNRESET, ETIMEDOUT, …).
 * - What node-postgres says itself: "Connection terminated …" (unexpectedly, or the pool's connection
 *   time-out), "timeout exceeded when trying to connect" (no pool slot in time), a client that "is not
 *   queryable" after a connection error, a pool that was ended (the process is stopping).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error as any, depth = 0; e && depth < 5; e = e.cause, depth++) {
    if (typeof e !== 'object') return false;
    if (e.severity === 'FATAL' || e.severity === 'PANIC') return true;
    const code = typeof e.code === 'string' ? e.code : '';
    if (/^08/.test(code) || /^57P0[123]$/.test(code) || code === '53300') return true;
    if (NETWORK_CODES.has(code)) return true;
    if (typeof e.message === 'string' && CLIENT_MESSAGES.some((m) => m.test(e.message))) return true;
  }
  return false;
}

/** Socket errors of a connection to the database. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
]);

/** node-postgres's own messages for a connection that is gone or could not be made in time. */
const CLIENT_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect/,
  /is not queryable/,
  /^Cannot use a pool after calling end on the pool/,
];
