import type { Writable } from 'node:stream';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { z } from 'zod';
import { AppError } from '../../platform/errors.ts';
import type { Position } from '../../platform/eventstore/types.ts';
import { findOrganization } from '../../read-side/api-keys/api-keys.queries.ts';
import type { Postline } from '../service.ts';
import { UsageError } from './usage.ts';

/**
 * A command that cannot be done (an unknown organization or key): said on standard error, exit code 1, so that
 * standard output holds only results (a `--json` line, say).
 */
export class CommandFailed extends Error {}

/** A command's options and positionals (node:util parseArgs); a mistake in them is a UsageError saying `usage`. */
export function parseOptions<T extends ParseArgsConfig>(
  config: T,
  usage: string,
): ReturnType<typeof parseArgs<T>> {
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
export function positionalsOf(args: string[], min: number, max: number, usage: string): string[] {
  const { positionals } = parseOptions({ args, options: {}, allowPositionals: true, strict: true }, usage);
  if (positionals.length < min || positionals.length > max) throw new UsageError(usage);
  return positionals;
}

/** What every subcommand works with: the open Postline, where to write, and how to check its input. */
export interface Cli {
  services: Postline['services'];
  runner: Postline['runner'];
  out: Writable;
  /** Writes one line. */
  write(s: string): void;
  /** The command's input, checked; `usage` says what it needs when it is not right. */
  parse<T extends z.ZodType>(schema: T, input: unknown, usage: string): z.output<T>;
  /** True when the organization exists; when it does not, throws CommandFailed saying so. */
  knownOrganization(orgId: string): Promise<true>;
  /**
   * Waits until the API keys written up to `position` work. False when the read models have not caught up within
   * PROJECTION_WAIT_MS: what was written is saved all the same (and works once they have), so a command that made
   * a key still shows it, the only time it can.
   */
  keysInUse(position: Position | undefined): Promise<boolean>;
}

/** What a command that made keys says when `keysInUse` was false. */
export const KEYS_NOT_YET_IN_USE =
  'Saved, and usable once the read models have caught up (npx postline projections status shows how far they are).';

export function cliOf({ services, runner }: Postline, out: Writable): Cli {
  const write = (s: string) => {
    out.write(s.endsWith('\n') ? s : `${s}\n`);
  };
  return {
    services,
    runner,
    out,
    write,
    parse(schema, input, usage) {
      const parsed = schema.safeParse(input);
      if (!parsed.success) throw new UsageError(usage);
      return parsed.data;
    },
    async knownOrganization(orgId) {
      if (await findOrganization(services.db, orgId)) return true;
      throw new CommandFailed(`No organization ${orgId} (npx postline orgs list shows them).`);
    },
    async keysInUse(position) {
      try {
        await services.readYourWrites.waitFor(['api_keys'], position);
        return true;
      } catch (error) {
        if (error instanceof AppError && error.code === 'projection_timeout') return false;
        throw error;
      }
    },
  };
}
