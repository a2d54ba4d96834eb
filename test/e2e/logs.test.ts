import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PATIENCE_MS } from '../support/patience.ts';
import {
  createOrgWithCli,
  freePort,
  ROOT,
  SERVER_START_MS,
  startServer,
  useServiceEnv,
} from '../support/process.ts';
import { authPlain, rawSmtp } from '../support/raw-smtp.ts';
import { apiClient } from '../support/service.ts';

const setup = useServiceEnv();

/** Runs the server with `format`, makes requests and an SMTP session with good and bad keys; its output. */
async function logsOf(format: string) {
  const [port, smtpPort] = [await freePort(), await freePort()];
  const env = {
    ...setup.env,
    PORT: String(port),
    SMTP_SUBMISSION_PORT: String(smtpPort),
    SMTP_ALLOW_INSECURE_AUTH: 'true',
    LOG_LEVEL: 'info',
    LOG_FORMAT: format,
  };
  const server = await startServer(env);
  const org = await createOrgWithCli(env, 'Logs');
  try {
    expect((await apiClient(`http://127.0.0.1:${port}`, org.live_key).get('/v1/api-keys')).status).toBe(200);
    expect(
      (await apiClient(`http://127.0.0.1:${port}`, 'pk_live_notarealsecret').get('/v1/api-keys')).status,
    ).toBe(401);
    const smtp = await rawSmtp(smtpPort);
    await smtp.command('EHLO client.test');
    expect((await smtp.command(`AUTH PLAIN ${authPlain('pk_live_notarealsecret')}`)).code).toBe(535);
    expect((await smtp.command(`AUTH PLAIN ${authPlain(org.live_key)}`)).code).toBe(235);
    await smtp.command('QUIT');
    await smtp.closed;
  } finally {
    await server.stop();
  }
  const output = server.output();
  // Neither the keys used nor the key guessed appear anywhere.
  expect(output).not.toContain(org.live_key);
  expect(output).not.toContain('notarealsecret');
  return output.split('\n').filter((l) => l.trim() !== '');
}

describe('the log', () => {
  it('prints lines for a person with LOG_FORMAT=pretty: one per request and per SMTP session', async () => {
    const lines = await logsOf('pretty');
    expect(lines.some((l) => l.trim().startsWith('{'))).toBe(false);
    const requests = lines.filter((l) => /\bINFO\b.*: request\b/.test(l));
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(requests.some((l) => l.includes('"status":401'))).toBe(true);
    const sessions = lines.filter((l) => /\bINFO\b.*: SMTP session\b/.test(l));
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatch(/"listener":"submission".*"refused":1/);
  });

  it('prints JSON lines when standard output is not a terminal (the default, auto)', async () => {
    const lines = await logsOf('auto');
    const json = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    expect(json.filter((l) => l.msg === 'request').map((l) => l.status)).toEqual(
      expect.arrayContaining([200, 401]),
    );
    expect(json.find((l) => l.msg === 'SMTP session')).toMatchObject({
      listener: 'submission',
      client: '127.0.0.1',
      messages: 0,
      refused: 1,
    });
  });
});

describe('`npm start` in a terminal', () => {
  const hasScript = spawnSync('script', ['--version']).status === 0;
  if (!hasScript) console.log('util-linux `script` not found: the terminal test of the log is skipped');
  it.skipIf(!hasScript)('prints readable lines, not JSON, when standard output is a terminal', async () => {
    const port = await freePort();
    const env = {
      ...process.env,
      ...setup.env,
      PORT: String(port),
      SMTP_SUBMISSION_PORT: 'off',
      SMTP_SUBMISSIONS_PORT: 'off',
      SMTP_MX_PORT: 'off',
      LOG_LEVEL: 'info',
    };
    // `script` runs `npm start` on a pseudo-terminal, as a person's shell would.
    const child = spawn('script', ['-qefc', 'npm start', '/dev/null'], { env, cwd: ROOT });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      for (
        const end = Date.now() + SERVER_START_MS;
        !output.includes('Postline serving') && Date.now() < end;
      )
        await new Promise((r) => setTimeout(r, 100));
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      for (const end = Date.now() + PATIENCE_MS; !output.includes('request') && Date.now() < end; )
        await new Promise((r) => setTimeout(r, 100));
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    const lines = output.split(/\r?\n/).filter((l) => l.includes('INFO'));
    expect(lines.some((l) => l.includes('Postline serving'))).toBe(true);
    expect(lines.some((l) => l.includes('request'))).toBe(true);
    expect(output).not.toContain('{"level"');
  });
});
