import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, runCli } from '../support/process.ts';
import { useTempDir } from '../support/temp-dir.ts';

const dataDir = useTempDir('port-taken');

describe('a start whose port is taken', () => {
  it('says why and exits 1, its background work stopped before its embedded server', async () => {
    const port = await freePort();
    const taker: Server = createServer();
    await new Promise<void>((listening) => taker.listen(port, '127.0.0.1', listening));
    try {
      const env = { POSTLINE_DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '', LOG_LEVEL: 'warn' };
      const start = await runCli(['serve'], {
        ...env,
        HOST: '127.0.0.1',
        PORT: String(port),
        SMTP_SUBMISSION_PORT: '0',
        SMTP_SUBMISSIONS_PORT: '0',
        SMTP_MX_PORT: '0',
      });
      expect(start.code).toBe(1);
      expect(start.stderr).toContain(`postline: listen EADDRINUSE: address already in use 127.0.0.1:${port}`);
      // Nothing else: no process of its own failing as the database goes away under it.
      expect(`${start.stdout}${start.stderr}`).not.toMatch(/"level":(50|60)/);
    } finally {
      await new Promise((closed) => taker.close(closed));
    }
  }, 120_000);
});
