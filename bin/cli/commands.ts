import type { Writable } from 'node:stream';
import type { Postline } from '../service.ts';
import { type Cli, cliOf, UsageError } from './cli.ts';
import { contactsImport, withAbsoluteFile } from './contacts-import.ts';
import { keysCreate, keysRevoke } from './keys.ts';
import { projectionsRebuild, projectionsStatus, streamsShow } from './operations.ts';
import { orgsCreate, orgsList, orgsSetClientDetails, orgsSetPlan } from './orgs.ts';
import { queueBounce, queueList, queuePause, queueResume, queueRetry } from './queue.ts';
import { sourcesList } from './sources.ts';

export const USAGE = `Usage: postline <command>

  serve                                         run the service (API, projections, processes)
  openapi                                       print the OpenAPI document of the API (JSON)
  orgs create --name <name> [--plan free|pro|business] [--json]
                                                create an organization; prints its live and test API keys once
  orgs list [--json]                            every organization, its plan (price) and its keys in use per
                                                mode; then what each plan costs and includes
  orgs set-plan <org_id> <free|pro|business>    move an organization to another plan
  orgs set-client-details <org_id> <on|off> [--forget]
                                                record openers' and clickers' IP address and user agent
                                                (sealed) or not; --forget erases what was recorded
  keys create --org <org_id> [--mode live|test] [--permission full_access|sending_access] [--name <name>] [--json]
                                                a new API key for an organization (one that has none left, too)
  keys revoke <key_id>                          delete an API key: refused at once in every process
  contacts import <file.csv> --org <org_id> [--mode live|test] [--audience <audience_id>]
                                                import contacts from a CSV file (header row with email;
                                                first_name, last_name; other columns become properties)
  projections status                            position and lag of every projection, and parked events
                                                (exit code 1 while there are any)
  projections rebuild [name]                    rebuild one projection (or all) from the event log
  streams show <stream-id>                      the history of one stream (e.g. email-em_…), for auditors
  queue [--org <org_id>] [--destination <domain>] [--json]
                                                the mail waiting for delivery per organization, destination
                                                and lane, and the pauses in force
  queue pause <domain> [--for <duration>] [--org <org_id>] [--reason <text>]
                                                hold delivery there (every organization's mail unless --org)
                                                for 1h or --for (30m, 2h, 1d; at most 30d); mail waits
  queue resume <domain> [--org <org_id>]        end a pause before its time
  queue retry <domain> [--org <org_id>]         make the mail waiting for a retry there due now
  queue bounce <domain> [--org <org_id>]        give up its queued mail: each recipient bounces softly
  sources [--check] [--json]                    the egress sources (SOURCES_FILE): pools, address, HELO name,
                                                warm-up day, today's cap and use per destination group;
                                                --check looks up their reverse DNS (exit code 1: a mismatch)
`;

/** Each subcommand, by its group and action. */
const COMMANDS: Record<string, (cli: Cli, rest: string[]) => Promise<number>> = {
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
  'queue pause': queuePause,
  'queue resume': queueResume,
  'queue retry': queueRetry,
  'queue bounce': queueBounce,
};

/** Runs one CLI command against an open Postline (local, or inside the running server). Returns the exit code. */
export async function runCommand(argv: string[], postline: Postline, out: Writable): Promise<number> {
  // `queue` alone, or with its options only, lists; its other actions are words.
  if (argv[0] === 'queue' && (argv[1] === undefined || argv[1].startsWith('--')))
    return queueList(cliOf(postline, out), argv.slice(1));
  if (argv[0] === 'sources') return sourcesList(cliOf(postline, out), argv.slice(1));
  const [group, action, ...rest] = argv;
  const name = `${group} ${action}`;
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) throw new UsageError(USAGE);
  return command(cliOf(postline, out), rest);
}

/**
 * The arguments with the files they name as absolute paths: a relative path means the operator's working
 * directory, and a running server, which works the command, has another.
 */
export function withAbsolutePaths(argv: string[]): string[] {
  if (argv[0] === 'contacts' && argv[1] === 'import')
    return [...argv.slice(0, 2), ...withAbsoluteFile(argv.slice(2))];
  return argv;
}
