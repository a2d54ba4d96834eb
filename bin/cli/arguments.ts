import { resolve } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { z } from 'zod';
import { queueDestination } from '../../domain/queue/queue.decider.ts';
import { AppError } from '../../platform/errors.ts';
import { resourceName } from '../../platform/http/route-schema.ts';
import { type CommandName, commandOf, UsageError } from './usage.ts';

/**
 * Each command's arguments, checked without a Postline: `bin/main.ts` checks them before it loads the service's
 * modules, starts an embedded PostgreSQL or asks the running server, so that a usage mistake is answered at once
 * (exit code 2). What needs the data (an organization that exists, a pause within the decider's 30 days) is the
 * command's to check.
 */

/** A command's options and positionals (node:util parseArgs); a mistake in them is a UsageError saying `usage`. */
function parseOptions<T extends ParseArgsConfig>(config: T, usage: string): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch {
    throw new UsageError(usage);
  }
}

/**
 * A command's words after its name, with no option among them and `min` to `max` of them; anything else is a
 * UsageError saying `usage` (an extra word is never ignored: `keys revoke <id> <other id>` revokes nothing).
 */
function positionalsOf(args: string[], min: number, max: number, usage: string): string[] {
  const { positionals } = parseOptions({ args, options: {}, allowPositionals: true, strict: true }, usage);
  if (positionals.length < min || positionals.length > max) throw new UsageError(usage);
  return positionals;
}

/** `input` checked with `schema`; when it is not right, a UsageError saying `usage`. */
function checked<T extends z.ZodType>(schema: T, input: unknown, usage: string): z.output<T> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new UsageError(usage);
  return parsed.data;
}

const PLAN = z.enum(['free', 'pro', 'business']);
const MODE = z.enum(['live', 'test']);

/** `contacts import`'s options. */
const IMPORT_OPTIONS = {
  org: { type: 'string' },
  mode: { type: 'string', default: 'live' },
  audience: { type: 'string' },
} as const;

/** `contacts import`'s arguments with its file (its positionals) resolved against this process's directory. */
export function withAbsoluteFile(rest: string[]): string[] {
  const { tokens } = parseArgs({
    args: rest,
    options: IMPORT_OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  return rest.map((arg, i) =>
    tokens.some((t) => t.kind === 'positional' && t.index === i) ? resolve(arg) : arg,
  );
}

/** How long `queue pause` holds a destination when `--for` is not given. */
export const DEFAULT_PAUSE = '1h';

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 } as const;

/** `2h`, `30m`, `1h30m`, `1d`: a positive duration in days, hours, minutes and seconds, in that order. */
export function parseDuration(text: string): number | null {
  const m = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text.trim());
  if (!m || text.trim() === '') return null;
  const [d, h, min, s] = m.slice(1).map((x) => Number(x ?? 0));
  const ms = d * UNIT_MS.d + h * UNIT_MS.h + min * UNIT_MS.m + s * UNIT_MS.s;
  return ms > 0 ? ms : null;
}

/** A destination that is no domain name is a usage mistake: exit code 2, saying why. */
function destinationOf(destination: string): string {
  try {
    return queueDestination(destination);
  } catch (e) {
    if (e instanceof AppError) throw new UsageError(`${e.message}: ${destination}`);
    throw e;
  }
}

/** A destination and its scope from `<destination> [--org X]`, and the values of the command's `strings` options. */
function targetOf<S extends string>(rest: string[], usage: string, strings: S[] = []) {
  const options = Object.fromEntries(['org', ...strings].map((name) => [name, { type: 'string' as const }]));
  const { values, positionals } = parseOptions(
    { args: rest, options, allowPositionals: true, strict: true },
    usage,
  );
  if (positionals.length !== 1) throw new UsageError(usage);
  const given = values as Partial<Record<S | 'org', string>>;
  return { destination: destinationOf(positionals[0]), orgId: given.org ?? null, given };
}

const QUEUE_PAUSE_USAGE = `queue pause needs <destination> and takes --for <duration> (e.g. 30m, 2h, 1d; default ${DEFAULT_PAUSE}, at most 30d), --org <org_id>, --reason <text>`;
const IMPORT_USAGE =
  'contacts import needs <file.csv> and --org <org_id>, and takes --mode live|test and --audience <audience_id>';
const KEYS_CREATE_USAGE =
  'keys create needs --org <org_id>, and takes --mode live|test, --permission full_access|sending_access, --name, --json';

/** Each command's arguments from the words after its name. */
const ARGUMENTS = {
  'orgs create': (rest: string[]) => {
    const usage = 'orgs create needs --name <name> and an optional --plan free|pro|business, --json';
    const { values } = parseOptions(
      {
        args: rest,
        options: {
          name: { type: 'string' },
          plan: { type: 'string', default: 'free' },
          json: { type: 'boolean', default: false },
        },
        strict: true,
      },
      usage,
    );
    return {
      ...checked(z.object({ name: resourceName(200), plan: PLAN }), values, usage),
      json: values.json,
    };
  },
  'orgs list': (rest: string[]) =>
    parseOptions(
      { args: rest, options: { json: { type: 'boolean', default: false } }, strict: true },
      'orgs list takes --json',
    ).values,
  'orgs set-plan': (rest: string[]) => {
    const usage = 'orgs set-plan needs <org_id> <free|pro|business>';
    const [orgId, plan] = checked(
      z.tuple([z.string().min(1), PLAN]),
      positionalsOf(rest, 2, 2, usage),
      usage,
    );
    return { orgId, plan };
  },
  'orgs set-client-details': (rest: string[]) => {
    const usage = 'orgs set-client-details needs <org_id> <on|off> and an optional --forget';
    const { values, positionals } = parseOptions(
      {
        args: rest,
        options: { forget: { type: 'boolean', default: false } },
        allowPositionals: true,
        strict: true,
      },
      usage,
    );
    const [orgId, setting] = checked(z.tuple([z.string().min(1), z.enum(['on', 'off'])]), positionals, usage);
    return { orgId, on: setting === 'on', forget: values.forget };
  },
  'keys create': (rest: string[]) => {
    const { values } = parseOptions(
      {
        args: rest,
        options: {
          org: { type: 'string' },
          mode: { type: 'string', default: 'live' },
          permission: { type: 'string', default: 'full_access' },
          name: { type: 'string', default: 'CLI' },
          json: { type: 'boolean', default: false },
        },
        strict: true,
      },
      KEYS_CREATE_USAGE,
    );
    const schema = z.object({
      org: z.string().min(1),
      mode: MODE,
      permission: z.enum(['full_access', 'sending_access']),
      // The API's limit for a key's name (POST /v1/api-keys).
      name: resourceName(100),
    });
    return { ...checked(schema, values, KEYS_CREATE_USAGE), json: values.json };
  },
  'keys revoke': (rest: string[]) => ({
    keyId: positionalsOf(rest, 1, 1, 'keys revoke needs <key_id>')[0],
  }),
  'contacts import': (rest: string[]) => {
    const { values, positionals } = parseOptions(
      { args: rest, options: IMPORT_OPTIONS, allowPositionals: true, strict: true },
      IMPORT_USAGE,
    );
    const schema = z.object({
      file: z.string().min(1),
      org: z.string().min(1),
      mode: MODE,
      audience: z.string().min(1).optional(),
    });
    return checked(
      schema,
      { ...values, file: positionals.length === 1 ? positionals[0] : undefined },
      IMPORT_USAGE,
    );
  },
  'projections status': (rest: string[]) => {
    positionalsOf(rest, 0, 0, 'projections status takes no arguments');
    return {};
  },
  'projections rebuild': (rest: string[]) => ({
    name: positionalsOf(rest, 0, 1, "projections rebuild takes one projection's name, or none for all")[0],
  }),
  'streams show': (rest: string[]) => ({
    streamId: positionalsOf(rest, 1, 1, 'streams show needs <stream-id>')[0],
  }),
  queue: (rest: string[]) => {
    const { values } = parseOptions(
      {
        args: rest,
        options: { org: { type: 'string' }, destination: { type: 'string' }, json: { type: 'boolean' } },
        strict: true,
      },
      'queue takes --org <org_id>, --destination <domain>, --json',
    );
    const destination = values.destination === undefined ? undefined : destinationOf(values.destination);
    return { orgId: values.org, destination, json: values.json ?? false };
  },
  'queue pause': (rest: string[]) => {
    const { destination, orgId, given } = targetOf(rest, QUEUE_PAUSE_USAGE, ['for', 'reason']);
    const ms = parseDuration(given.for ?? DEFAULT_PAUSE);
    if (ms === null) throw new UsageError(`Not a duration: ${given.for}. ${QUEUE_PAUSE_USAGE}`);
    return { destination, orgId, ms, reason: given.reason ?? null };
  },
  'queue resume': (rest: string[]) =>
    targetOf(rest, 'queue resume needs <destination> and takes --org <org_id>'),
  'queue retry': (rest: string[]) =>
    targetOf(rest, 'queue retry needs <destination> and takes --org <org_id>'),
  'queue bounce': (rest: string[]) =>
    targetOf(rest, 'queue bounce needs <destination> and takes --org <org_id>'),
  sources: (rest: string[]) =>
    parseOptions(
      { args: rest, options: { json: { type: 'boolean' }, check: { type: 'boolean' } }, strict: true },
      'sources takes --check, --json',
    ).values,
} satisfies Record<CommandName, (rest: string[]) => unknown>;

/** The checked arguments of the command `N`. */
export type ArgumentsOf<N extends CommandName> = ReturnType<(typeof ARGUMENTS)[N]>;

/** The command `argv` names and its checked arguments; a UsageError when either is not right. */
export function argumentsOf(argv: string[]): { name: CommandName; args: unknown } {
  const { name, rest } = commandOf(argv);
  return { name, args: ARGUMENTS[name](rest) };
}
