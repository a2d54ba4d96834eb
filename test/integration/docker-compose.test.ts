import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// docker-compose.yml is checked against the Compose specification's JSON schema (vendored in
// test/fixtures/compose-spec/, see its README), so the check needs neither Docker nor a docker-compose package.

const root = new URL('../..', import.meta.url);
const schema = JSON.parse(
  readFileSync(new URL('test/fixtures/compose-spec/compose-spec.json', root), 'utf8'),
);
// strict off: the schema uses annotations ajv does not know (`deprecated`); its $schema is draft-07, ajv's default.
const validate = new Ajv({ strict: false, allErrors: true, validateSchema: false }).compile(schema);

type Compose = {
  services: Record<
    string,
    {
      image?: string;
      build?: { dockerfile?: string };
      ports?: string[];
      environment?: any;
      volumes?: string[];
      deploy?: { replicas?: number };
    }
  >;
};

/**
 * Compose's variable interpolation (`$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `$$`) with the variables
 * in `env`, applied to every string of the parsed file. A required variable (`${VAR:?…}`) that is unset throws.
 */
function interpolate(value: unknown, env: Record<string, string>): unknown {
  if (typeof value === 'string')
    return value.replace(
      /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
      (all, name: string, colon: string, op: string, arg: string, bare: string) => {
        if (all === '$$') return '$';
        if (bare) return env[bare] ?? '';
        const set = colon ? !!env[name] : name in env;
        if (op === '-') return set ? env[name] : arg;
        if (op === '+') return set ? arg : '';
        if (op === '?' && !set) throw new Error(`${name} is required: ${arg}`);
        return env[name] ?? '';
      },
    );
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env)]));
  return value;
}

/** The file as parsed (merge keys resolved, as Compose does), and as Compose resolves it with only the secret set. */
const text = readFileSync(new URL('docker-compose.yml', root), 'utf8');
const raw = parse(text, { merge: true });
const config = interpolate(raw, { POSTLINE_SECRET_KEY: 'c2VjcmV0' }) as Compose;
const POSTLINE_SERVICES = ['api', 'smtp', 'workers'];

const errorsOf = (document: unknown) =>
  validate(document) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);

describe('docker-compose.yml', () => {
  it('is valid by the Compose specification and starts the stores and Postline by role', () => {
    expect(errorsOf(raw)).toEqual([]);
    expect(errorsOf(config)).toEqual([]);
    expect(Object.keys(config.services).sort()).toEqual([
      'api',
      'kurrentdb',
      'postgres',
      'redis',
      'smtp',
      'workers',
    ]);
    expect(POSTLINE_SERVICES.map((s) => config.services[s].environment.POSTLINE_ROLES)).toEqual([
      'api',
      'smtp',
      'workers,projections',
    ]);
    expect(config.services.api.deploy?.replicas).toBe(2);
  });

  it('points every Postline process at the shared stores, secret and data, built from the Dockerfile', () => {
    for (const name of POSTLINE_SERVICES) {
      const s = config.services[name];
      expect(s.environment.KURRENTDB_URL).toBe('kurrentdb://kurrentdb:2113?tls=false');
      expect(s.environment.DATABASE_URL).toMatch(/^postgres(ql)?:\/\/\S+@postgres:5432\//);
      expect(s.environment.REDIS_URL).toBe('redis://redis:6379');
      expect(s.environment.POSTLINE_SECRET_KEY).toBe('c2VjcmV0');
      expect(s.environment.PUBLIC_URL).toBe('http://localhost:3000');
      expect(s.volumes).toContain('postline-data:/app/data');
      expect(s.build?.dockerfile).toBe('Dockerfile');
    }
    expect(config.services.api.ports).toEqual(['3000-3001:3000']);
    expect(config.services.smtp.ports).toEqual(['587:2587', '465:2465', '25:2525']);
    expect(config.services.kurrentdb.ports).toContain('2113:2113');
  });

  it('refuses to start without the shared secret key', () => {
    expect(() => interpolate(raw, {})).toThrow(/POSTLINE_SECRET_KEY is required/);
  });

  it('pins every image to a version (no `latest`, no bare name)', () => {
    const images = Object.values(config.services).flatMap((s) => (s.image ? [s.image] : []));
    expect(images.length).toBe(3);
    for (const image of images) expect(image).toMatch(/:\d+(\.\d+)+(-[\w.]+)?$/);
  });

  it('rejects a file the specification does not allow', () => {
    const broken = structuredClone(raw);
    broken.services.api.depends_on.postgres.condition = 'service_ready';
    broken.services.postgres.prots = ['5432:5432'];
    expect(errorsOf(broken)).toEqual(
      expect.arrayContaining([
        expect.stringContaining('/services/api/depends_on'),
        expect.stringContaining('/services/postgres must NOT have additional properties'),
      ]),
    );
  });
});
