import type { EventMetadata, Mode } from '../eventstore/types.ts';
import type { Permission, Plan } from '../tenancy.ts';

/** Who is calling: resolved from the API key on every request. */
export interface AuthContext {
  orgId: string;
  plan: Plan;
  mode: Mode;
  keyId: string;
  permission: Permission;
  /** For a sending_access key restricted to one domain. */
  domainId: string | null;
}

/** The metadata of the events a caller's request appends: the organization, the mode and the key as actor. */
export const metaOf = (auth: AuthContext): EventMetadata => ({
  orgId: auth.orgId,
  mode: auth.mode,
  actor: auth.keyId,
});

/** Looks a presented key up (by its SHA-256 hash); null when unknown or deleted. */
export type Authenticate = (key: string) => Promise<AuthContext | null>;
