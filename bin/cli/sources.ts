import { createResolver } from '../../platform/dns.ts';
import { checkReverseDns, type ReverseDns } from '../../processes/delivery/egress/reverse-dns.ts';
import { type SourceView, sourcesView } from '../../processes/delivery/egress/sources-view.ts';
import type { ArgumentsOf } from './arguments.ts';
import type { Cli } from './cli.ts';

/** A table's rows with their columns padded to the widest cell. */
function table(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  return rows.map((row) =>
    row
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd(),
  );
}

const reverseText = (r: ReverseDns | undefined) =>
  !r ? '-' : r.matches ? 'ok' : `MISMATCH (${r.error ?? (r.names.join(', ') || 'no PTR')})`;

/** A source in warm-up: today's use and cap per group, one line each. */
function groupLines(s: SourceView): string[] {
  return s.groups.map((g) =>
    g.group === 'default'
      ? `    every other group: ${g.cap === null ? 'no cap' : `at most ${g.cap} each`} today`
      : `    ${g.group}: ${g.used} sent today, ${g.cap === null ? 'no cap' : `cap ${g.cap}`}`,
  );
}

/**
 * `sources [--check] [--json]`: each egress source (SOURCES_FILE), its pools, address, HELO name, warm-up day,
 * and per destination group today's cap and use; `--check` looks up each address's reverse DNS (exit code 1
 * when one does not name its HELO name).
 */
export async function sourcesList({ services, write }: Cli, values: ArgumentsOf<'sources'>): Promise<number> {
  const policy = services.policies.egress;
  const view = await sourcesView(services.db, policy, services.clock.now());
  const reverse = values.check
    ? new Map(
        (await checkReverseDns(policy, createResolver(services.config.DNS_SERVERS))).map((r) => [
          r.source,
          r,
        ]),
      )
    : new Map<string, ReverseDns>();
  const mismatch = [...reverse.values()].some((r) => !r.matches);
  if (values.json) {
    for (const s of view) {
      const r = reverse.get(s.source);
      write(JSON.stringify({ ...s, ...(r && { reverse_dns: { names: r.names, matches: r.matches } }) }));
    }
    return mismatch ? 1 : 0;
  }
  if (!policy.declared) write('No SOURCES_FILE: mail leaves from the machine’s own address, no warm-up.');
  const head = ['SOURCE', 'POOLS', 'ADDRESS', 'HELO', 'WEIGHT', 'WARM-UP', ...(values.check ? ['PTR'] : [])];
  const rows = view.map((s) => [
    s.source,
    s.pools.join(',') || '-',
    s.address ?? '(not bound)',
    s.helo ?? '(host name)',
    String(s.weight),
    s.warmup ? `day ${s.warmup.day} (from ${s.warmup.started})` : 'none',
    ...(values.check ? [reverseText(reverse.get(s.source))] : []),
  ]);
  const lines = table([head, ...rows]);
  write(lines[0]);
  view.forEach((s, i) => {
    write(lines[i + 1]);
    for (const line of groupLines(s)) write(line);
  });
  return mismatch ? 1 : 0;
}
