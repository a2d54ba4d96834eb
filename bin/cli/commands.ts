import type { Writable } from 'node:stream';
import type { Postline } from '../service.ts';
import { type ArgumentsOf, argumentsOf } from './arguments.ts';
import { type Cli, cliOf } from './cli.ts';
import { contactsImport } from './contacts-import.ts';
import { keysCreate, keysRevoke } from './keys.ts';
import { projectionsRebuild, projectionsStatus, streamsShow } from './operations.ts';
import { orgsCreate, orgsList, orgsSetClientDetails, orgsSetPlan } from './orgs.ts';
import { queueBounce, queueList, queuePause, queueResume, queueRetry } from './queue.ts';
import { sourcesList } from './sources.ts';
import type { CommandName } from './usage.ts';

/** Each command, by its name (usage.ts). */
const RUN: { [N in CommandName]: (cli: Cli, args: ArgumentsOf<N>) => Promise<number> } = {
  'orgs create': orgsCreate,
  'orgs list': orgsList,
  'orgs set-plan': orgsSetPlan,
  'orgs set-client-details': orgsSetClientDetails,
  'keys create': keysCreate,
  'keys revoke': keysRevoke,
  'contacts import': contactsImport,
  'projections status': projectionsStatus,
  'projections rebuild': projectionsRebuild,
  'streams show': streamsShow,
  queue: queueList,
  'queue pause': queuePause,
  'queue resume': queueResume,
  'queue retry': queueRetry,
  'queue bounce': queueBounce,
  sources: sourcesList,
};

/** Runs one CLI command against an open Postline (local, or inside the running server). Returns the exit code. */
export async function runCommand(argv: string[], postline: Postline, out: Writable): Promise<number> {
  const { name, args } = argumentsOf(argv);
  const run = RUN[name] as (cli: Cli, args: unknown) => Promise<number>;
  return run(cliOf(postline, out), args);
}
