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
    for (const layer of ['platform/', 'read-side/', 'write-side/', 'projections/', 'processes/'])
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
  ['platform/http/auth-context.ts', 'export type AuthContext = { orgId: string };'],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a fixture file
  ['write-side/emails/email.events.ts', 'export const emailStream = (id: string) => `email-${id}`;'],
  ['write-side/emails/status.ts', 'export const rollUp = () => 1;'],
  [
    'write-side/emails/email.decider.ts',
    "import { AppError } from '../../platform/errors.ts';\nimport type { Decider } from '../../platform/eventstore/command.ts';\nimport { emailStream } from './email.events.ts';",
  ],
  ['write-side/emails/email.commands.ts', "import { db } from '../../platform/db/database.ts';"],
  ['write-side/emails/email.routes.ts', "import { sendEmail } from './email.commands.ts';"],
  ['read-side/emails/emails.queries.ts', "import { rollUp } from '../../write-side/emails/status.ts';"],
  [
    'read-side/emails/emails.routes.ts',
    "import type { EmailEvent } from '../../write-side/emails/email.events.ts';",
  ],
  ['projections/emails.projection.ts', "import { emailStream } from '../write-side/emails/email.events.ts';"],
  ['processes/process.ts', "import { db } from '../platform/db/database.ts';"],
  ['processes/delivery/outbound.ts', "import { x } from '../process.ts';\nexport const messageId = 1;"],
  [
    'processes/delivery/jobs.ts',
    "import { x } from './outbound.ts';\nexport const m = { sql: 'CREATE TABLE IF NOT EXISTS delivery_jobs (id text)' };",
  ],
  [
    'processes/simulator/simulator.process.ts',
    "import { sendEmail } from '../../write-side/emails/email.commands.ts';\nimport { findEmail } from '../../read-side/emails/emails.queries.ts';",
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
    [
      'platform/ids.ts',
      "import { x } from '../read-side/emails/emails.queries.ts';",
      'read-side/emails/emails.queries.ts',
    ],
    [
      'read-side/usage/usage.routes.ts',
      "import { sendEmail } from '../../write-side/emails/email.commands.ts';",
      'write-side/emails/email.commands.ts',
    ],
    [
      'read-side/usage/usage.queries.ts',
      "import type { EmailState } from '../../write-side/emails/email.decider.ts';",
      'write-side/emails/email.decider.ts',
    ],
    [
      'projections/usage.projection.ts',
      "import { x } from '../read-side/emails/emails.routes.ts';",
      'read-side/emails/emails.routes.ts',
    ],
    [
      'write-side/emails/quota.decider.ts',
      "import type { Decider } from '../../platform/eventstore/command.ts';\nexport const q: Decider<1, 2, 3> = 1 as any;\nimport type { AuthContext } from '../../platform/http/auth-context.ts';",
      'platform/http/auth-context.ts',
    ],
    [
      'write-side/domains/domain.decider.ts',
      "import { db } from '../../platform/db/database.ts';",
      'platform/db/database.ts',
    ],
    [
      'write-side/domains/domain.decider.ts',
      "import { sendEmail } from '../emails/email.commands.ts';",
      'write-side/emails/email.commands.ts',
    ],
    [
      'write-side/domains/domain.decider.ts',
      "import { resolveTxt } from 'node:dns/promises';",
      'package:dns/promises',
    ],
    [
      'write-side/domains/domain.commands.ts',
      "import { x } from '../../read-side/emails/emails.routes.ts';",
      'read-side/emails/emails.routes.ts',
    ],
    [
      'processes/simulator/plan.ts',
      "import { messageId } from '../delivery/outbound.ts';",
      'processes/delivery/outbound.ts',
    ],
    [
      'processes/simulator/plan.ts',
      "type T = import('../../write-side/emails/email.decider.ts').EmailState;",
      'write-side/emails/email.decider.ts',
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
    [
      'read-side/emails/history.ts',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a fixture file
      'export const read = (id: string) => store.readStream(`email-${id}`);',
      'stream:email-',
    ],
    ['read-side/emails/jobs.ts', "export const q = 'SELECT * FROM delivery_jobs';", 'table:delivery_jobs'],
  ])('reports %s importing what its layer may not (%s)', (file, source, target) => {
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
