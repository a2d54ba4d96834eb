/** What the `postline` command takes: printed by `--help`, and with a usage mistake. */
export const USAGE = `Usage: postline <command>

  serve                                         run the service (API, projections, processes)
  openapi                                       print the OpenAPI document of the API (JSON)
  --version                                     print Postline's version
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

/** Wrong or missing arguments: the CLI prints what the command needs and exits 2. */
export class UsageError extends Error {}

/** The commands that run on a Postline, by group and action; `queue` and `sources` alone list. */
const COMMANDS = [
  'orgs create',
  'orgs list',
  'orgs set-plan',
  'orgs set-client-details',
  'keys create',
  'keys revoke',
  'contacts import',
  'projections status',
  'projections rebuild',
  'streams show',
  'queue',
  'queue pause',
  'queue resume',
  'queue retry',
  'queue bounce',
  'sources',
] as const;
export type CommandName = (typeof COMMANDS)[number];

/**
 * The command `argv` names and the arguments after its name; a name no command has is a UsageError, said before
 * anything is started for it.
 */
export function commandOf(argv: string[]): { name: CommandName; rest: string[] } {
  const [group, action] = argv;
  // `queue` alone, or with its options only, lists (its other actions are words), as `sources` does.
  const listing =
    group === 'sources' || (group === 'queue' && (action === undefined || action.startsWith('--')));
  const name = listing ? group : `${group} ${action}`;
  const known = COMMANDS.find((c) => c === name);
  if (!known) throw new UsageError(USAGE);
  return { name: known, rest: argv.slice(listing ? 1 : 2) };
}
