import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { useFieldMessages } from './field-messages.ts';

// The environment's mistakes are said in the words of the API's (field-messages.ts).
useFieldMessages();

const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const commaList = z
  .string()
  .optional()
  .transform((v) =>
    (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
const url = (protocols: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    `must be a URL (${protocols.join(' or ')})`,
  );

/** A listener's port: `off` turns it off, 0 picks a free one (tests). */
const listenerPort = (port: number) =>
  z
    .union([z.literal('off'), z.coerce.number().int().min(0).max(65535)], {
      message: 'must be a port (0 to 65535) or off',
    })
    .default(port)
    .transform((v) => (v === 'off' ? null : v));

const isCidr = (p: string) => {
  try {
    ipaddr.parseCIDR(p);
    return true;
  } catch {
    return false;
  }
};

/** What a process can run: the HTTP API, the SMTP listeners, the projections, the process managers. */
export const ROLES = ['api', 'smtp', 'projections', 'workers'] as const;
export type Role = (typeof ROLES)[number];
const isRole = (r: string): r is Role => (ROLES as readonly string[]).includes(r);

/** Every setting Postline reads from the environment; the README's configuration table mirrors this. */
const schema = z.object({
  /** `all` (default), or a comma-separated list of roles: processes of any roles share one PostgreSQL. */
  POSTLINE_ROLES: commaList
    .refine(
      (list) => list.every((r) => r === 'all' || isRole(r)),
      `must be all or a comma-separated list of ${ROLES.join(', ')}`,
    )
    .transform(
      (list): ReadonlySet<Role> =>
        new Set(list.length === 0 || list.includes('all') ? ROLES : list.filter(isRole)),
    ),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** Bind address of the HTTP server (the API and the embedded admin endpoint share it). */
  HOST: z.string().min(1).default('0.0.0.0'),
  /** Express's `trust proxy`: which peers' X-Forwarded-For names the client (unset: none, the peer is the client). */
  TRUST_PROXY: commaList.refine(
    (list) =>
      list.every(
        (p) => ['loopback', 'linklocal', 'uniquelocal'].includes(p) || ipaddr.isValid(p) || isCidr(p),
      ),
    'must list IP addresses, subnets (10.0.0.0/8) or loopback, linklocal, uniquelocal',
  ),
  /** A request whose headers have not all arrived by then is answered 408 and its connection closed. */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** On SIGTERM, how long requests, SMTP sessions and work in flight get to finish before the process exits. */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  /** A request (headers and body) not wholly received by then is answered 408 and its connection closed. */
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  DATABASE_URL: url(['postgres:', 'postgresql:']).optional(),
  /** Connections each service process holds to PostgreSQL for its statements (one more LISTENs). */
  DATABASE_POOL_SIZE: z.coerce.number().int().min(2).max(1000).default(20),
  POSTLINE_DATA_DIR: z.string().min(1).default('./data'),
  KURRENTDB_URL: url(['kurrentdb:', 'esdb:', 'kurrentdb+discover:', 'esdb+discover:']).optional(),
  REDIS_URL: url(['redis:', 'rediss:']).optional(),
  PUBLIC_URL: url(['http:', 'https:']).optional(),
  POSTLINE_SECRET_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}=$/, 'must be 32 bytes in base64 (openssl rand -base64 32)')
    .optional(),
  /** When set, GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `json` lines, `pretty` lines for a person, or `auto`: pretty on a terminal, JSON otherwise. */
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  RATE_LIMIT_RPS: z.coerce.number().int().positive().default(10),
  RATE_LIMIT_BATCH_RPS: z.coerce.number().int().positive().default(2),
  /** Requests per second and client address to the handlers without a key (tracking links, downloads). */
  PUBLIC_RATE_LIMIT_RPS: z.coerce.number().int().positive().default(50),
  /** Failed authentications per client address and minute; past it every keyed request from there is a 429. */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().positive().default(20),
  PROJECTION_WAIT_MS: z.coerce.number().int().positive().default(5000),
  /** The largest CSV file `POST /v1/audiences/{id}/contacts/import` takes (50 MB); past it a 413. */
  CONTACT_IMPORT_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(50 * 1024 * 1024),
  IDEMPOTENCY_LEASE_MS: z.coerce.number().int().positive().default(60_000),
  LOG_POLL_MS: z.coerce.number().int().positive().default(1000),
  DNS_SERVERS: commaList,
  DOMAIN_RECHECK_INTERVAL_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(6 * 3600_000),
  /** A domain's DKIM key is rotated automatically once older than this (about 6 months); 0: never. */
  DKIM_ROTATE_AFTER_MS: z.coerce
    .number()
    .int()
    .nonnegative()
    .default(182 * 24 * 3600_000),
  /** How long an old DKIM record stays listed after the new key signs, before it is flagged removable. */
  DKIM_RETIRE_AFTER_MS: z.coerce
    .number()
    .int()
    .nonnegative()
    .default(7 * 24 * 3600_000),
  POSTLINE_SPF_INCLUDE: z.string().optional(),
  POSTLINE_OUTBOUND_IPS: commaList,
  POSTLINE_MX_HOST: z.string().default('mx.postline.localhost'),
  POSTLINE_TRACKING_HOST: z.string().optional(),
  POSTLINE_RETURN_PATH_SUBDOMAIN: z.string().default('bounces'),
  /** Contacts a broadcast turns into emails per step (one append round and one progress event each). */
  BROADCAST_EXPANSION_BATCH: z.coerce.number().int().min(1).max(5000).default(2000),
  OUTBOUND_SMTP_PORT: z.coerce.number().int().min(1).max(65535).default(25),
  SMARTHOST_URL: url(['smtp:', 'smtps:']).optional(),
  /** false accepts self-signed receivers and smarthosts (tests, private relays). */
  OUTBOUND_TLS_REJECT_UNAUTHORIZED: bool.default(true),
  /** PEM file of CAs trusted beside the system's for MTA-STS: policy fetches and verified MX TLS (tests). */
  OUTBOUND_TLS_CA_FILE: z.string().min(1).optional(),
  /** Apply receiving domains' MTA-STS policies (RFC 8461) and send them TLS reports (RFC 8460). */
  MTA_STS: bool.default(true),
  /** Port of `https://mta-sts.<domain>/` policy fetches: 443; a test serves policies elsewhere. */
  MTA_STS_PORT: z.coerce.number().int().min(1).max(65535).default(443),
  /** From address and contact-info of the daily TLS reports; default `postmaster@` the SMTP host name. */
  TLSRPT_FROM: z.email().optional(),
  /**
   * The DKIM key (a PEM file, RSA or Ed25519, read at start-up) and selector that sign the TLS reports sent by
   * mail, for the domain of TLSRPT_FROM; unset, the reports go unsigned. Both or neither.
   */
  TLSRPT_DKIM_KEY_FILE: z.string().min(1).optional(),
  TLSRPT_DKIM_SELECTOR: z
    .string()
    .regex(
      /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i,
      'a DNS label, or labels joined by dots',
    )
    .optional(),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** Attachments given by `path` may be fetched from loopback and private addresses (docs/emails.md). */
  ATTACHMENT_PATHS_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** How long fetching one attachment given by `path` may take in all, its answer and its body. */
  ATTACHMENT_PATHS_TIMEOUT_MS: z.coerce.number().int().positive().default(15_000),
  /** The SMTP relay: submission with STARTTLS, and with implicit TLS (docs/smtp.md). */
  SMTP_SUBMISSION_PORT: listenerPort(2587),
  SMTP_SUBMISSIONS_PORT: listenerPort(2465),
  /** The MX: mail for inbound domains (docs/receiving.md), bounces and complaints (docs/bounces.md). */
  SMTP_MX_PORT: listenerPort(2525),
  /** rspamd's HTTP address (`http://127.0.0.1:11333`): it scores received messages; unset, Postline does. */
  RSPAMD_URL: z.url().optional(),
  /** A received message whose spam score reaches this is `is_spam`. */
  INBOUND_SPAM_THRESHOLD: z.coerce.number().min(0).default(5),
  /** Received messages and their attachments are deleted this many days after they arrived (metadata stays). */
  INBOUND_RETENTION_DAYS: z.coerce.number().int().positive().default(30),
  /** Webhook deliveries that ended (not pending) are deleted, with their attempts, this many days after they ended. */
  WEBHOOK_DELIVERY_RETENTION_DAYS: z.coerce.number().int().positive().default(30),
  /** Bind address of the SMTP listeners. */
  /** A JSON file of bounce classification rules, tried before the defaults (docs/bounces.md). */
  BOUNCE_RULES_FILE: z.string().min(1).optional(),
  /** A JSON file of traffic-shaping groups over the shipped ones (docs/deliverability.md, "Traffic shaping"). */
  SHAPING_FILE: z.string().min(1).optional(),
  /** A JSON file of egress sources, pools and warm-up (docs/deliverability.md, "Egress IP pools and warm-up"). */
  SOURCES_FILE: z.string().min(1).optional(),
  SMTP_HOST: z.string().min(1).default('0.0.0.0'),
  /** Name in the SMTP greeting and Received headers (default: the host of PUBLIC_URL). */
  SMTP_HOSTNAME: z.string().min(1).optional(),
  /** PEM files, reloaded when they change; unset: a self-signed certificate in the data dir. */
  SMTP_TLS_CERT: z.string().min(1).optional(),
  SMTP_TLS_KEY: z.string().min(1).optional(),
  /** AUTH over a plain connection (tests, trusted networks); otherwise AUTH needs TLS first. */
  SMTP_ALLOW_INSECURE_AUTH: bool.default(false),
  SMTP_MAX_CONNECTIONS_PER_IP: z.coerce.number().int().positive().default(20),
  /** Sessions each SMTP listener holds at once; past it a new connection is answered 421 4.3.2. */
  SMTP_MAX_SESSIONS: z.coerce.number().int().positive().default(1000),
  /**
   * A session that makes no progress for this long (no complete command line, no 1 KB of a message) is closed
   * with 421 4.4.2: silent clients and slow drips alike.
   */
  SMTP_IDLE_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  /** A session (however active) that lasts longer than this is closed with 421: slow drips end. */
  SMTP_SESSION_TIMEOUT_MS: z.coerce.number().int().positive().default(600_000),
});

/** Every environment variable Postline reads (docs/configuration.md must describe each). */
export const CONFIG_VARIABLES = Object.keys(schema.shape);

export type Config = z.infer<typeof schema> & {
  PUBLIC_URL: string;
  embedded: boolean;
  /** The JSON of BOUNCE_RULES_FILE, read at start-up; its rules are checked by domain/emails/bounce-classes.ts. */
  bounceRules?: unknown;
  /** The JSON of SHAPING_FILE, read at start-up; checked by domain/delivery/shaping-file.ts. */
  shaping?: unknown;
  /** The JSON of SOURCES_FILE, read at start-up; checked by domain/delivery/egress-file.ts. */
  sources?: unknown;
  /** The PEM of TLSRPT_DKIM_KEY_FILE, read at start-up. */
  tlsrptDkimKey?: string;
  /** The PEM of OUTBOUND_TLS_CA_FILE, read at start-up. */
  outboundTlsCa?: string;
};

export class ConfigError extends Error {}

/** The name in the SMTP greeting, Received headers and TLS reports: SMTP_HOSTNAME, else PUBLIC_URL's host. */
export const smtpHostname = (config: Config) => config.SMTP_HOSTNAME ?? new URL(config.PUBLIC_URL).hostname;

/** Parses the environment; an invalid value stops start-up with a message naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = result.data;
  if (Boolean(c.SMTP_TLS_CERT) !== Boolean(c.SMTP_TLS_KEY)) {
    throw new ConfigError(
      'Invalid configuration:\n  SMTP_TLS_CERT: SMTP_TLS_CERT and SMTP_TLS_KEY go together',
    );
  }
  if (Boolean(c.TLSRPT_DKIM_KEY_FILE) !== Boolean(c.TLSRPT_DKIM_SELECTOR)) {
    throw new ConfigError(
      'Invalid configuration:\n  TLSRPT_DKIM_KEY_FILE: TLSRPT_DKIM_KEY_FILE and TLSRPT_DKIM_SELECTOR go together',
    );
  }
  if (!c.DATABASE_URL && c.POSTLINE_ROLES.size < ROLES.length) {
    throw new ConfigError(
      'Invalid configuration:\n  POSTLINE_ROLES: the embedded database belongs to one process, which runs every role; set DATABASE_URL to split them',
    );
  }
  return {
    ...c,
    ...(c.BOUNCE_RULES_FILE && {
      bounceRules: readFile('BOUNCE_RULES_FILE', c.BOUNCE_RULES_FILE, JSON.parse),
    }),
    ...(c.SHAPING_FILE && { shaping: readFile('SHAPING_FILE', c.SHAPING_FILE, JSON.parse) }),
    ...(c.SOURCES_FILE && { sources: readFile('SOURCES_FILE', c.SOURCES_FILE, JSON.parse) }),
    ...(c.TLSRPT_DKIM_KEY_FILE && {
      tlsrptDkimKey: readFile('TLSRPT_DKIM_KEY_FILE', c.TLSRPT_DKIM_KEY_FILE, privatePem),
    }),
    ...(c.OUTBOUND_TLS_CA_FILE && {
      outboundTlsCa: readFile('OUTBOUND_TLS_CA_FILE', c.OUTBOUND_TLS_CA_FILE, (pem) => pem),
    }),
    PUBLIC_URL: c.PUBLIC_URL ?? `http://localhost:${c.PORT}`,
    embedded: !c.DATABASE_URL,
  };
}

/** A PEM private key, checked to be one. */
function privatePem(pem: string): string {
  createPrivateKey(pem);
  return pem;
}

/** A file a variable names, read and parsed at start-up; one that is missing or does not parse stops it. */
function readFile<T>(variable: string, path: string, parse: (text: string) => T): T {
  try {
    return parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(`Invalid configuration:\n  ${variable}: ${(err as Error).message}`);
  }
}
