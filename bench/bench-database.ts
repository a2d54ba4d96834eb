import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabaseUrl } from '../test/support/databases.ts';

/**
 * A fresh PostgreSQL database and data dir for a bench, with the environment every in-process bench service starts
 * from: no rate limit in the way, warnings only. `dispose` drops and removes both.
 */
export async function benchDatabase(name: string) {
  const { url, drop } = await createTestDatabaseUrl();
  const dataDir = mkdtempSync(join(tmpdir(), `postline-bench-${name}-`));
  return {
    url,
    env: {
      PORT: '0',
      DATABASE_URL: url,
      POSTLINE_DATA_DIR: dataDir,
      POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
      RATE_LIMIT_RPS: '1000000',
      RATE_LIMIT_BATCH_RPS: '1000000',
    },
    dispose: async () => {
      rmSync(dataDir, { recursive: true, force: true });
      await drop();
    },
  };
}
