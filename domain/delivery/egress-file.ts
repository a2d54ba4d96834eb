import { z } from 'zod';
import { type EgressPolicy, type EgressSource, MACHINE_SOURCE } from './egress-sources.ts';
import { DEFAULT_WARMUP } from './egress-warmup.ts';
import { whereOf } from './shaping-file.ts';

const isAddress = (text: string) => z.ipv4().safeParse(text).success || z.ipv6().safeParse(text).success;
const name = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,62}$/i, 'is a name of letters, digits, ".", "_" and "-" (at most 63)');
const hostName = z
  .string()
  .max(253)
  .regex(/^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]([a-z0-9-]*[a-z0-9])?$/i, 'is a fully qualified host name');

const fileSchema = z.strictObject({
  sources: z
    .array(
      z.strictObject({
        name,
        address: z.string().refine(isAddress, 'is an IPv4 or IPv6 address'),
        helo: hostName,
        weight: z.number().positive().max(1_000_000).optional(),
        warmup: z.union([z.strictObject({ started: z.iso.date() }), z.literal(false)]).optional(),
      }),
    )
    .min(1),
  pools: z.array(z.strictObject({ name, sources: z.array(z.string()).min(1) })).min(1),
  defaultPool: z.string().optional(),
  broadcastPool: z.string().optional(),
  organizations: z
    .record(
      z.string(),
      z.strictObject({ transactional: z.string().optional(), broadcast: z.string().optional() }),
    )
    .optional(),
  warmup: z.record(z.string().min(1), z.array(z.number().int().min(0)).max(366)).optional(),
});
type File = z.infer<typeof fileSchema>;

/** The policy without a file: the machine's one source (no bind, its host name in EHLO), no warm-up. */
export const MACHINE_EGRESS: EgressPolicy = {
  sources: [{ name: MACHINE_SOURCE, weight: 1 }],
  pools: [{ name: MACHINE_SOURCE, sources: [MACHINE_SOURCE] }],
  defaultPool: MACHINE_SOURCE,
  broadcastPool: MACHINE_SOURCE,
  organizations: {},
  warmup: DEFAULT_WARMUP,
  declared: false,
};

/** The first name given twice, if any. */
const twice = (names: string[]) => names.find((n, i) => names.indexOf(n) !== i);

/** What the schema cannot say: names unique, every name a pool or source that is declared. */
function crossChecks(file: File): void {
  const sources = file.sources.map((s) => s.name);
  const pools = file.pools.map((p) => p.name);
  const again = twice(sources);
  if (again) throw new Error(`sources: "${again}" is declared twice`);
  const address = twice(file.sources.map((s) => s.address));
  if (address) throw new Error(`sources: the address ${address} is declared twice`);
  if (twice(pools)) throw new Error(`pools: "${twice(pools)}" is declared twice`);
  for (const [i, p] of file.pools.entries())
    for (const [j, s] of p.sources.entries())
      if (!sources.includes(s)) throw new Error(`pools[${i}] ("${p.name}").sources[${j}]: no source "${s}"`);
  if (file.defaultPool === undefined && pools.length > 1)
    throw new Error('defaultPool: required when there are several pools');
  const assigned: [string, string | undefined][] = [
    ['defaultPool', file.defaultPool],
    ['broadcastPool', file.broadcastPool],
    ...Object.entries(file.organizations ?? {}).flatMap(([org, a]) => [
      [`organizations.${org}.transactional`, a.transactional] as [string, string | undefined],
      [`organizations.${org}.broadcast`, a.broadcast] as [string, string | undefined],
    ]),
  ];
  for (const org of Object.keys(file.organizations ?? {}))
    if (!org.startsWith('org_')) throw new Error(`organizations.${org}: is an organization id (org_…)`);
  for (const [where, pool] of assigned)
    if (pool !== undefined && !pools.includes(pool)) throw new Error(`${where}: no pool "${pool}"`);
}

/**
 * The egress policy of SOURCES_FILE's JSON (the machine's one source without it): sources, pools, which pool
 * each organization's lanes use, and the warm-up schedule (the shipped one with the file's ramps over it, group
 * by group). Throws a message naming the faulty entry.
 */
export function parseSourcesFile(json: unknown): EgressPolicy {
  if (json === undefined || json === null) return MACHINE_EGRESS;
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${whereOf(issue.path, json)}: ${issue.message}`);
  }
  const file = parsed.data;
  crossChecks(file);
  const defaultPool = file.defaultPool ?? file.pools[0].name;
  return {
    sources: file.sources.map(
      (s): EgressSource => ({
        name: s.name,
        address: s.address,
        helo: s.helo.toLowerCase(),
        weight: s.weight ?? 1,
        ...(s.warmup && { warmupStarted: s.warmup.started }),
      }),
    ),
    pools: file.pools,
    defaultPool,
    broadcastPool: file.broadcastPool ?? defaultPool,
    organizations: file.organizations ?? {},
    warmup: { ...DEFAULT_WARMUP, ...file.warmup },
    declared: true,
  };
}

/** The egress policy the configuration holds (SOURCES_FILE's JSON, if any), checked. */
export const egressPolicyOf = (config: { sources?: unknown }): EgressPolicy =>
  parseSourcesFile(config.sources);
