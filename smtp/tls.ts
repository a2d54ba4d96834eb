import { existsSync, mkdirSync, readFileSync, unwatchFile, watchFile, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { type Config, smtpHostname } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';

export interface Certificate {
  key: string;
  cert: string;
}

/** How often the configured PEM files are looked at: a renewed certificate is in use within this long. */
const WATCH_INTERVAL_MS = 5000;

/**
 * The SMTP listeners' certificate: the configured PEM files, or a self-signed one generated once into the data
 * dir (clients must then be told not to verify it: fine for tests, not for production, hence the warning).
 */
export async function loadCertificate(config: Config, log: Logger): Promise<Certificate> {
  if (config.SMTP_TLS_CERT && config.SMTP_TLS_KEY) {
    return {
      cert: readFileSync(config.SMTP_TLS_CERT, 'utf8'),
      key: readFileSync(config.SMTP_TLS_KEY, 'utf8'),
    };
  }
  const dir = join(config.POSTLINE_DATA_DIR, 'smtp-tls');
  const files = { key: join(dir, 'key.pem'), cert: join(dir, 'cert.pem') };
  log.warn(
    { cert: files.cert },
    'SMTP_TLS_CERT and SMTP_TLS_KEY are not set: the SMTP listeners use a self-signed certificate',
  );
  if (!existsSync(files.key) || !existsSync(files.cert)) {
    const hostname = smtpHostname(config);
    const pems = await generate([{ name: 'commonName', value: hostname }], {
      keySize: 2048,
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: hostname }] }],
    });
    mkdirSync(dir, { recursive: true });
    writeFileSync(files.key, pems.private, { mode: 0o600 });
    writeFileSync(files.cert, pems.cert);
  }
  return { key: readFileSync(files.key, 'utf8'), cert: readFileSync(files.cert, 'utf8') };
}

/**
 * Calls `onChange` with the new certificate when a configured PEM file changes (both must parse). Returns the
 * function that stops watching. No-op for the generated certificate.
 */
export function watchCertificate(
  config: Config,
  log: Logger,
  onChange: (c: Certificate) => void,
): () => void {
  const { SMTP_TLS_CERT: certFile, SMTP_TLS_KEY: keyFile } = config;
  if (!certFile || !keyFile) return () => {};
  const reload = () => {
    try {
      onChange({ cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') });
      log.info({ cert: certFile }, 'SMTP TLS certificate reloaded');
    } catch (err) {
      // Half-written files (a renewal in progress) fail to load: the old certificate stays until the next change.
      log.warn({ err, cert: certFile }, 'SMTP TLS certificate not reloaded');
    }
  };
  for (const f of [certFile, keyFile]) watchFile(f, { interval: WATCH_INTERVAL_MS }, reload);
  return () => {
    for (const f of [certFile, keyFile]) unwatchFile(f, reload);
  };
}
