import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { startPostline } from '../bin/service.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { createTestDatabaseUrl } from '../test/support/databases.ts';
import { createOrganization } from '../write-side/organizations/commands.ts';

const autocannon = (await import('autocannon' as string)).default as any;
const { url, drop } = await createTestDatabaseUrl();
const config = loadConfig({
  PORT: '0',
  DATABASE_URL: url,
  POSTLINE_DATA_DIR: mkdtempSync(join(os.tmpdir(), 'p-')),
  POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
  LOG_LEVEL: 'warn',
  RATE_LIMIT_RPS: '1000000',
});
const postline = await startPostline(config, { processes: false, log: createLogger('warn') });
const org = await createOrganization(postline.services, { name: 'B', plan: 'business' });
await postline.services.readYourWrites.waitFor(['api_keys'], org.position);
const body = JSON.stringify({ from: 'a@b.test', to: ['x@rcpt.test'], subject: 's', text: 't' });
for (const round of [1, 2]) {
  const r = await autocannon({
    url: `http://127.0.0.1:${postline.port}/v1/emails`,
    method: 'POST',
    connections: 50,
    duration: 4,
    headers: { authorization: `Bearer ${org.testKey}`, 'content-type': 'application/json' },
    body,
  });
  console.log(round, 'rps', r['2xx'] / 4, 'p50', r.latency.p50, 'p99', r.latency.p99, 'non2xx', r.non2xx);
}
await postline.close();
await drop();
