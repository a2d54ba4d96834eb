import type { Writable } from 'node:stream';
import { AppError } from '../../platform/errors.ts';
import type { Position } from '../../platform/eventstore/types.ts';
import { findOrganization } from '../../read-side/api-keys/api-keys.queries.ts';
import type { Postline } from '../service.ts';

/**
 * A command that cannot be done (an unknown organization or key): said on standard error, exit code 1, so that
 * standard output holds only results (a `--json` line, say).
 */
export class CommandFailed extends Error {}

/** What every subcommand works with: the open Postline and where to write (its arguments: arguments.ts). */
export interface Cli {
  services: Postline['services'];
  runner: Postline['runner'];
  out: Writable;
  /** Writes one line. */
  write(s: string): void;
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
