import type { Mode } from '../eventstore/types.ts';

export type Permission = 'full_access' | 'sending_access';
export type Plan = 'free' | 'pro' | 'business';

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

/** Looks a presented key up (by its SHA-256 hash); null when unknown or deleted. */
export type Authenticate = (key: string) => Promise<AuthContext | null>;
