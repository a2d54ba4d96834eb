import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../platform/config.ts';

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
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['REDIS_URL', 'http://x'],
    ['POSTLINE_SECRET_KEY', 'short'],
    ['LOG_LEVEL', 'loud'],
    ['KURRENTDB_URL', 'not a url'],
    ['WEBHOOK_ALLOW_PRIVATE_NETWORKS', 'yes'],
  ])('names %s when it is invalid (%s)', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', REDIS_URL: '' }).embedded).toBe(true);
  });
});
