import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES, ConfigError, loadConfig } from '../../platform/config.ts';

describe('configuration', () => {
  it('has defaults that run embedded on port 3000', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      PORT: 3000,
      POSTLINE_DATA_DIR: './data',
      embedded: true,
      PUBLIC_URL: 'http://localhost:3000',
    });
    expect(c.RATE_LIMIT_RPS).toBe(10);
    expect(c.RATE_LIMIT_BATCH_RPS).toBe(2);
  });

  it('switches to PostgreSQL when DATABASE_URL is set', () => {
    const c = loadConfig({ DATABASE_URL: 'postgres://u@h/db', PORT: '8080' });
    expect(c.embedded).toBe(false);
    expect(c.PUBLIC_URL).toBe('http://localhost:8080');
    expect(c.DATABASE_POOL_SIZE).toBe(20);
    expect(loadConfig({ DATABASE_POOL_SIZE: '5' }).DATABASE_POOL_SIZE).toBe(5);
  });

  it('runs every role unless POSTLINE_ROLES names some, which needs PostgreSQL', () => {
    expect([...loadConfig({}).POSTLINE_ROLES]).toEqual(['api', 'smtp', 'projections', 'workers']);
    const pg = { DATABASE_URL: 'postgres://u@h/db' };
    expect([...loadConfig({ ...pg, POSTLINE_ROLES: 'all' }).POSTLINE_ROLES]).toHaveLength(4);
    expect([...loadConfig({ ...pg, POSTLINE_ROLES: ' workers, projections ' }).POSTLINE_ROLES]).toEqual([
      'workers',
      'projections',
    ]);
    expect(() => loadConfig({ ...pg, POSTLINE_ROLES: 'api,mailer' })).toThrow(
      /POSTLINE_ROLES: must be all or/,
    );
    expect(() => loadConfig({ POSTLINE_ROLES: 'api' })).toThrow(/POSTLINE_ROLES: the embedded database/);
  });

  it('runs the SMTP listeners on 2587 and 2465 unless a port is set or off', () => {
    expect(loadConfig({})).toMatchObject({ SMTP_SUBMISSION_PORT: 2587, SMTP_SUBMISSIONS_PORT: 2465 });
    const c = loadConfig({ SMTP_SUBMISSION_PORT: '587', SMTP_SUBMISSIONS_PORT: 'off' });
    expect([c.SMTP_SUBMISSION_PORT, c.SMTP_SUBMISSIONS_PORT]).toEqual([587, null]);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_POOL_SIZE', '1'],
    ['SMTP_SUBMISSION_PORT', 'abc'],
    ['SMTP_SUBMISSIONS_PORT', '70000'],
    ['SMTP_TLS_CERT', '/etc/cert.pem'],
    ['REDIS_URL', 'http://x'],
    ['POSTLINE_SECRET_KEY', 'short'],
    ['LOG_LEVEL', 'loud'],
    ['KURRENTDB_URL', 'not a url'],
    ['WEBHOOK_ALLOW_PRIVATE_NETWORKS', 'yes'],
    ['TLSRPT_DKIM_KEY_FILE', '/nonexistent/key.pem'],
    ['TLSRPT_DKIM_SELECTOR', 'not a label'],
  ])('names %s when it is invalid (%s)', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it('says what a variable must be in the words of the API, not zod’s', () => {
    expect(() => loadConfig({ PORT: 'abc' })).toThrow('PORT: must be a number');
    expect(() => loadConfig({ LOG_LEVEL: 'loud' })).toThrow(/LOG_LEVEL: must be one of "fatal", "error", /);
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', REDIS_URL: '' }).embedded).toBe(true);
  });

  it('documents every variable in docs/configuration.md', () => {
    const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    const missing = CONFIG_VARIABLES.filter((name) => !doc.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });
});
