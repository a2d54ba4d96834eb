import { z } from 'zod';

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

/** Every setting Postline reads from the environment; the README's configuration table mirrors this. */
const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  DATABASE_URL: url(['postgres:', 'postgresql:']).optional(),
  POSTLINE_DATA_DIR: z.string().min(1).default('./data'),
  KURRENTDB_URL: url(['kurrentdb:', 'esdb:', 'kurrentdb+discover:', 'esdb+discover:']).optional(),
  REDIS_URL: url(['redis:', 'rediss:']).optional(),
  PUBLIC_URL: url(['http:', 'https:']).optional(),
  POSTLINE_SECRET_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}=$/, 'must be 32 bytes in base64 (openssl rand -base64 32)')
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  RATE_LIMIT_RPS: z.coerce.number().int().positive().default(10),
  RATE_LIMIT_BATCH_RPS: z.coerce.number().int().positive().default(2),
  PROJECTION_WAIT_MS: z.coerce.number().int().positive().default(5000),
  LOG_POLL_MS: z.coerce.number().int().positive().default(1000),
  DNS_SERVERS: commaList,
  DOMAIN_RECHECK_INTERVAL_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(6 * 3600_000),
  POSTLINE_SPF_INCLUDE: z.string().optional(),
  POSTLINE_OUTBOUND_IPS: commaList,
  POSTLINE_MX_HOST: z.string().default('mx.postline.localhost'),
  POSTLINE_TRACKING_HOST: z.string().optional(),
  POSTLINE_RETURN_PATH_SUBDOMAIN: z.string().default('bounces'),
  OUTBOUND_SMTP_PORT: z.coerce.number().int().min(1).max(65535).default(25),
  SMARTHOST_URL: url(['smtp:', 'smtps:']).optional(),
  /** false accepts self-signed receivers and smarthosts (tests, private relays). */
  OUTBOUND_TLS_REJECT_UNAUTHORIZED: bool.default(true),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool.default(false),
});

export type Config = z.infer<typeof schema> & { PUBLIC_URL: string; embedded: boolean };

export class ConfigError extends Error {}

/** Parses the environment; an invalid value stops start-up with a message naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = result.data;
  return {
    ...c,
    PUBLIC_URL: c.PUBLIC_URL ?? `http://localhost:${c.PORT}`,
    embedded: !c.DATABASE_URL,
  };
}
