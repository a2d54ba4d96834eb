/**
 * The tenancy vocabulary every layer shares: what plan an organization is on and what an API key may do. It lives
 * outside platform/http/ so that deciders and events can name it without importing the HTTP layer; what each plan
 * includes is the plan catalogue's business (domain/organizations/plans.ts).
 */
import type { Mode } from './eventstore/types.ts';

export type Plan = 'free' | 'pro' | 'business';

export type Permission = 'full_access' | 'sending_access';

/** Whose data a query reads: an organization in one mode. An API key's AuthContext is one. */
export interface Tenant {
  orgId: string;
  mode: Mode;
}

/** Who gives a command on an aggregate of theirs, named by its id field `K`, and when. */
export type CommandCaller<K extends string> = Tenant & Record<K, string> & { at: string };
