import { describe, expect, it } from 'vitest';
import {
  ALLOWED,
  checkLayering,
  repositoryRoot,
  repositorySources,
  unusedAllowances,
} from '../support/layering.ts';

// DESIGN §2: imports only run downwards. The rules and how they are checked: docs/architecture.md, "Layering".

describe('layering of the repository', () => {
  const sources = repositorySources(repositoryRoot);

  it('reads the layers it checks', () => {
    for (const layer of [
      'platform/',
      'domain/',
      'read-side/',
      'write-side/',
      'projections/',
      'processes/',
      'smtp/',
    ])
      expect([...sources.keys()].some((f) => f.startsWith(layer))).toBe(true);
  });

  it('has no import, stream name or private table that breaks a rule', () => {
    expect(checkLayering(sources)).toEqual([]);
  });

  it('keeps no allowance that no edge needs any more', () => {
    expect(unusedAllowances(sources)).toEqual([]);
  });
});

/** A small tree with one file per role, to which each case adds one offending file. */
const clean: [string, string][] = [
  ['platform/errors.ts', 'export class AppError extends Error {}'],
  ['platform/db/database.ts', "import pg from 'pg'; export const db = pg;"],
  ['platform/db/rows.ts', "import { db } from './database.ts'; export const rows = db;"],
  ['platform/auth/auth-context.ts', 'export type AuthContext = { orgId: string };'],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a fixture file
  ['domain/emails/email.events.ts', 'export const emailStream = (id: string) => `email-${id}`;'],
  ['domain/emails/status.ts', 'export const rollUp = () => 1;'],
  [
    'domain/emails/email.decider.ts',
    "import { AppError } from '../../platform/errors.ts';\nimport type { Decider } from '../../platform/eventstore/command.ts';\nimport type { Database } from '../../platform/db/database.ts';\nimport { emailStream } from './email.events.ts';",
  ],
  ['write-side/emails/email.handlers.ts', "import { db } from '../../platform/db/database.ts';"],
  ['write-side/emails/email.routes.ts', "import { sendEmail } from './email.handlers.ts';"],
  ['read-side/emails/emails.queries.ts', "import { rollUp } from '../../domain/emails/status.ts';"],
  [
    'read-side/emails/emails.routes.ts',
    "import type { EmailEvent } from '../../domain/emails/email.events.ts';",
  ],
  [
    'projections/emails.projection.ts',
    "import { emailStream } from '../domain/emails/email.events.ts';\nimport { findEmail } from '../read-side/emails/emails.queries.ts';",
  ],
  ['processes/process.ts', "import { db } from '../platform/db/database.ts';"],
  ['processes/delivery/outbound.ts', "import { x } from '../process.ts';\nexport const messageId = 1;"],
  [
    'processes/delivery/jobs.ts',
    "import { x } from './outbound.ts';\nexport const m = { sql: 'CREATE TABLE IF NOT EXISTS delivery_jobs (id text)' };",
  ],
  [
    'processes/simulator/simulator.process.ts',
    "import { sendEmail } from '../../write-side/emails/email.handlers.ts';\nimport { findEmail } from '../../read-side/emails/emails.queries.ts';",
  ],
  [
    'smtp/mx.ts',
    "import { x } from '../processes/process.ts';\nimport { sendEmail } from '../write-side/emails/email.handlers.ts';",
  ],
  ['bin/composition.ts', "import { anything } from '../processes/delivery/outbound.ts';"],
];

const check = (file: string, source: string) =>
  checkLayering(new Map([...clean, [file, source]]), []).map((v) => `${v.from} -> ${v.to}`);

describe('the layering check', () => {
  it('passes the clean tree', () => {
    expect(checkLayering(new Map(clean), [])).toEqual([]);
  });

  it.each([
    ['platform/ids.ts', "import { x } from '../domain/emails/status.ts';", 'domain/emails/status.ts'],
    [
      'domain/emails/quota.decider.ts',
      "import { db } from '../../platform/db/database.ts';",
      'platform/db/database.ts',
    ],
    // A platform module that does no I/O itself but imports one that does is not I/O-free either.
    [
      'domain/emails/quota.decider.ts',
      "import { rows } from '../../platform/db/rows.ts';",
      'platform/db/rows.ts',
    ],
    ['domain/domains/domain-name.ts', "import { isIP } from 'node:net';", 'package:net'],
    ['domain/domains/dns.ts', "import { resolveTxt } from 'node:dns/promises';", 'package:dns/promises'],
    ['domain/emails/quota.decider.ts', "import { Kysely } from 'kysely';", 'package:kysely'],
    [
      'domain/emails/quota.decider.ts',
      "import { findEmail } from '../../read-side/emails/emails.queries.ts';",
      'read-side/emails/emails.queries.ts',
    ],
    [
      'domain/emails/quota.decider.ts',
      "import { sendEmail } from '../../write-side/emails/email.handlers.ts';",
      'write-side/emails/email.handlers.ts',
    ],
    [
      'read-side/usage/usage.routes.ts',
      "import { sendEmail } from '../../write-side/emails/email.handlers.ts';",
      'write-side/emails/email.handlers.ts',
    ],
    [
      'write-side/domains/domain.routes.ts',
      "import { findEmail } from '../../read-side/emails/emails.queries.ts';",
      'read-side/emails/emails.queries.ts',
    ],
    [
      'projections/usage.projection.ts',
      "import { x } from '../read-side/emails/emails.routes.ts';",
      'read-side/emails/emails.routes.ts',
    ],
    [
      'projections/usage.projection.ts',
      "import { x } from '../write-side/emails/email.handlers.ts';",
      'write-side/emails/email.handlers.ts',
    ],
    [
      'write-side/domains/domain.handlers.ts',
      "import { x } from '../../processes/delivery/outbound.ts';",
      'processes/delivery/outbound.ts',
    ],
    [
      'processes/simulator/plan.ts',
      "import { messageId } from '../delivery/outbound.ts';",
      'processes/delivery/outbound.ts',
    ],
    [
      'processes/simulator/plan.ts',
      "type T = import('../../write-side/emails/email.routes.ts').Routes;",
      'write-side/emails/email.routes.ts',
    ],
    [
      'processes/shared.ts',
      "export { messageId } from './delivery/outbound.ts';",
      'processes/delivery/outbound.ts',
    ],
    [
      'processes/simulator/plan.ts',
      "const w = new URL('../delivery/outbound.ts', import.meta.url);",
      'processes/delivery/outbound.ts',
    ],
    ['processes/simulator/plan.ts', "import { x } from '../../smtp/mx.ts';", 'smtp/mx.ts'],
    [
      'smtp/relay.ts',
      "import { x } from '../processes/delivery/outbound.ts';",
      'processes/delivery/outbound.ts',
    ],
    [
      'read-side/emails/history.ts',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a fixture file
      'export const read = (id: string) => store.readStream(`email-${id}`);',
      'stream:email-',
    ],
    ['read-side/emails/jobs.ts', "export const q = 'SELECT * FROM delivery_jobs';", 'table:delivery_jobs'],
  ])('reports %s importing what its floor may not (%s)', (file, source, target) => {
    expect(check(file, source)).toEqual([`${file} -> ${target}`]);
  });

  it('lets an allowance through, and only the edge it names', () => {
    const sources = new Map([
      ...clean,
      ['read-side/emails/jobs.ts', "export const q = 'SELECT * FROM delivery_jobs';"] as [string, string],
    ]);
    const allowed = [{ from: 'read-side/emails/jobs.ts', to: 'table:delivery_jobs', why: 'test' }];
    expect(checkLayering(sources, allowed)).toEqual([]);
    expect(unusedAllowances(new Map(clean), allowed)).toEqual(allowed);
  });

  it('names a reason for every allowance it keeps', () => {
    for (const a of ALLOWED) expect(a.why.length).toBeGreaterThan(0);
  });
});
