import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

/** Runs `docker-compose` (Debian's v1 package validates a file without a Docker engine) in the repository root. */
async function compose(...args: string[]): Promise<string> {
  try {
    const { stdout } = await run('docker-compose', ['--file', 'docker-compose.yml', ...args], {
      cwd: root,
      // Values the file takes from the environment, so the check does not depend on the caller's.
      env: { ...process.env, POSTLINE_SECRET_KEY: '', PUBLIC_URL: '', LOG_LEVEL: '' },
    });
    return stdout;
  } catch (error: any) {
    if (error?.code === 'ENOENT') {
      throw new Error(
        'docker-compose is not installed, so docker-compose.yml cannot be checked: install it (apt-get install -y docker-compose; .ci/run does)',
      );
    }
    throw new Error(`docker-compose ${args.join(' ')} failed:\n${error?.stderr ?? error}`);
  }
}

describe('docker-compose.yml', () => {
  it('is valid and starts KurrentDB, PostgreSQL and Postline', async () => {
    await compose('config', '--quiet');
    const services = (await compose('config', '--services')).split('\n').filter(Boolean);
    expect(services.sort()).toEqual(['kurrentdb', 'postgres', 'postline']);
  });

  it('points Postline at both stores and builds it from the Dockerfile', async () => {
    const config = await compose('config');
    expect(config).toMatch(/KURRENTDB_URL: kurrentdb:\/\/kurrentdb:2113\?tls=false/);
    expect(config).toMatch(/DATABASE_URL: postgres(ql)?:\/\/\S+@postgres:5432\//);
    expect(config).toMatch(/dockerfile: Dockerfile/);
    expect(config).toMatch(/published: 3000|3000:3000/);
    expect(config).toMatch(/2113/);
  });
});
