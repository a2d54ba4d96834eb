import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * POSTLINE_SECRET_KEY when set; otherwise a key generated once into the data dir (mode 0600), which is what
 * embedded mode wants. Several processes on PostgreSQL must share the key: set POSTLINE_SECRET_KEY there.
 */
export function resolveSecretKey(config: {
  POSTLINE_SECRET_KEY?: string;
  POSTLINE_DATA_DIR: string;
}): string {
  if (config.POSTLINE_SECRET_KEY) return config.POSTLINE_SECRET_KEY;
  const file = join(config.POSTLINE_DATA_DIR, 'secret.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(config.POSTLINE_DATA_DIR, { recursive: true });
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  return key;
}
