import type { Resolver } from 'node:dns/promises';
import type { EgressPolicy } from '../../../domain/delivery/egress-sources.ts';
import type { Logger } from '../../../platform/logger.ts';

/** A source's reverse DNS: the names its address's PTR records give, and whether its HELO name is one. */
export interface ReverseDns {
  source: string;
  address: string;
  helo: string;
  names: string[];
  matches: boolean;
  /** Why nothing could be read (a DNS error code); absent when the look-up answered. */
  error?: string;
}

const bare = (name: string) => name.toLowerCase().replace(/\.$/, '');

/**
 * Receivers compare the EHLO name with the connecting address's reverse DNS (its PTR record): a mismatch costs
 * reputation. Each declared source is looked up; nothing here refuses to start (a loopback address has no PTR).
 */
export async function checkReverseDns(policy: EgressPolicy, resolver: Resolver): Promise<ReverseDns[]> {
  const bound = policy.sources.filter((s) => s.address && s.helo);
  return Promise.all(
    bound.map(async (s) => {
      const checked = { source: s.name, address: s.address as string, helo: s.helo as string };
      try {
        const names = (await resolver.reverse(checked.address)).map(bare);
        return { ...checked, names, matches: names.includes(bare(checked.helo)) };
      } catch (err) {
        const error = (err as { code?: string }).code ?? (err as Error).message;
        return { ...checked, names: [], matches: false, error };
      }
    }),
  );
}

/** At start-up: a warning for each source whose reverse DNS does not give its HELO name. */
export async function warnReverseDns(policy: EgressPolicy, resolver: Resolver, log: Logger): Promise<void> {
  if (!policy.declared) return;
  for (const r of await checkReverseDns(policy, resolver))
    if (!r.matches)
      log.warn(
        { source: r.source, address: r.address, helo: r.helo, ptr: r.names, error: r.error },
        'egress source: its reverse DNS does not name its HELO name (receivers may distrust its mail)',
      );
}
