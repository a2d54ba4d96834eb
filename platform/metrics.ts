import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/**
 * Prometheus metrics: one registry per process, so each process reports what it did itself (its requests, the
 * outcomes it recorded, its SMTP sessions and webhook requests). Instrumented code calls the counters below, one
 * line at each place; `GET /metrics` and the gauges read from the database at scrape time are in
 * `http/metrics-endpoint.ts`.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A counter of this process's registry. */
const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
  new Counter<L>({ name, help, labelNames, registers: [registry] });

/** A histogram of durations in seconds, in this process's registry. */
const durations = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
  new Histogram<L>({ name, help, labelNames, buckets: DURATION_BUCKETS, registers: [registry] });

const httpRequests = counter(
  'postline_http_requests_total',
  'HTTP requests answered, by method, route pattern and status.',
  ['method', 'route', 'status'],
);
const httpDuration = durations(
  'postline_http_request_duration_seconds',
  'Time from a request arriving to its answer being sent, by method, route pattern and status.',
  ['method', 'route', 'status'],
);
/** One answered request; `route` is its pattern (`/v1/emails/:email_id`), never the raw path. */
export function observeHttp(method: string, route: string, status: number, seconds: number): void {
  const labels = { method, route, status: String(status) };
  httpRequests.inc(labels);
  httpDuration.observe(labels, seconds);
}

/** Per recipient for delivered, delivery_delayed, bounced and complained; per email for accepted. */
export const emailOutcomes = counter(
  'postline_emails_total',
  'Emails accepted, and recipients delivered, delayed (retried later), bounced or complained, by mode, as recorded by this process.',
  ['outcome', 'mode'],
);

export const bounces = counter(
  'postline_bounces_total',
  'Recipients bounced, by class (docs/bounces.md), type (hard, soft) and mode, as recorded by this process.',
  ['classification', 'type', 'mode'],
);

export const smtpSessions = counter(
  'postline_smtp_outbound_sessions_total',
  'Outbound SMTP connections to MX hosts or the smarthost: opened (greeted, TLS and AUTH done) or failed.',
  ['result'],
);
export const smtpReplies = counter(
  'postline_smtp_outbound_replies_total',
  'Replies of receiving servers per recipient, by class (2xx, 4xx, 5xx).',
  ['class'],
);
/** The class of an SMTP reply code: `2xx`, `4xx`, `5xx`. */
export const replyClass = (code: number) => `${Math.floor(code / 100)}xx`;

const webhookDeliveries = counter(
  'postline_webhook_deliveries_total',
  'Webhook requests sent, by outcome: success (2xx), http_error (another status), no_response.',
  ['outcome'],
);
const webhookDuration = durations(
  'postline_webhook_delivery_duration_seconds',
  'Time from sending a webhook request to its answer (or giving up), by outcome.',
  ['outcome'],
);

/** Every sync the blob store asks of the disk: a blob's file, or the folder holding its name (shared by puts). */
export const blobSyncs = counter(
  'postline_blob_syncs_total',
  'fsync calls of the blob store, by kind: file (a blob written) or folder (its name, one sync shared by the puts in flight).',
  ['kind'],
);

/** Writes a request made of its events' rows ahead of a projection that was behind (ReadYourWrites.writeAhead). */
export const writesAhead = counter(
  'postline_read_model_writes_ahead_total',
  "Requests that wrote their events' rows ahead of a read model that had not reached them in time, by projection.",
  ['projection'],
);

/** One webhook request's outcome (`status` null: no answer) and how long it took. */
export function observeWebhook(status: number | null, ms: number): void {
  const outcome = status === null ? 'no_response' : status >= 200 && status < 300 ? 'success' : 'http_error';
  webhookDeliveries.inc({ outcome });
  webhookDuration.observe({ outcome }, ms / 1000);
}
