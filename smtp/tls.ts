import { existsSync, mkdirSync, unwatchFile, watchFile, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Config, smtpHostname } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';

export interface Certificate {
  key: string;
  cert: string;
}

/** How often the configured PEM files are looked at: a renewed certificate is in use within this long. */
const WATCH_INTERVAL_MS = 5000;

/**
 * The PEM files, read without holding the event loop: a file that is slow to give its bytes (a network mount, a
 * secret store's pipe) holds back only the listeners, while HTTP answers and `/readyz` says not ready.
 */
const readPems = async (files: { cert: string; key: string }): Promise<Certificate> => ({
  cert: await readFile(files.cert, 'utf8'),
  key: await readFile(files.key, 'utf8'),
});

/**
 * The SMTP listeners' certificate: the configured PEM files, or a self-signed one generated once into the data
 * dir (clients must then be told not to verify it: fine for tests, not for production, hence the warning).
 */
export async function loadCertificate(config: Config, log: Logger): Promise<Certificate> {
  if (config.SMTP_TLS_CERT && config.SMTP_TLS_KEY)
    return readPems({ cert: config.SMTP_TLS_CERT, key: config.SMTP_TLS_KEY });
  const dir = join(config.POSTLINE_DATA_DIR, 'smtp-tls');
  const files = { key: join(dir, 'key.pem'), cert: join(dir, 'cert.pem') };
  log.warn(
    { cert: files.cert },
    'SMTP_TLS_CERT and SMTP_TLS_KEY are not set: the SMTP listeners use a self-signed certificate',
  );
  if (!existsSync(files.key) || !existsSync(files.cert)) {
    // Loaded only to make one: its X.509 libraries are a seventh of the CPU an operator's command takes to start.
    const { generate } = await import('selfsigned');
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
  return readPems(files);
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
  const reload = () =>
    readPems({ cert: certFile, key: keyFile })
      .then((pems) => {
        onChange(pems);
        log.info({ cert: certFile }, 'SMTP TLS certificate reloaded');
      })
      // Half-written files (a renewal in progress) fail to load: the old certificate stays until the next change.
      .catch((err) => log.warn({ err, cert: certFile }, 'SMTP TLS certificate not reloaded'));
  for (const f of [certFile, keyFile]) watchFile(f, { interval: WATCH_INTERVAL_MS }, reload);
  return () => {
    for (const f of [certFile, keyFile]) unwatchFile(f, reload);
  };
}
