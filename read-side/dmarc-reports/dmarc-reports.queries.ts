import type { Selectable } from 'kysely';
import type { Database } from '../../platform/db/database.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { findDomainById } from '../domains/domains.queries.ts';
import { readModels } from '../read-models.ts';
import type { DmarcReportSourcesTable, DmarcReportsTable } from './dmarc-reports.schema.ts';

/** Reporter-days one answer holds: more than a year of the large reporters. */
const MAX_DAYS = 400;

type Row = Selectable<DmarcReportsTable>;
type SourceRow = Selectable<DmarcReportSourcesTable>;
const COUNTS = ['messages', 'dmarc_pass', 'dkim_pass', 'dkim_aligned', 'spf_pass', 'spf_aligned'] as const;
const SOURCE_COUNTS = ['messages', 'dmarc_pass', 'dkim_aligned', 'spf_aligned'] as const;

const groupInto = <T>(groups: Map<string, T[]>, key: string, item: T) => {
  const group = groups.get(key);
  if (group) group.push(item);
  else groups.set(key, [item]);
};

/** Sources of several reports by IP, their counts summed, most messages first. */
function mergeSources(sources: SourceRow[], postline: ReadonlySet<string>) {
  const byIp = new Map<string, { ip: string } & Record<(typeof SOURCE_COUNTS)[number], number>>();
  for (const s of sources) {
    const into = byIp.get(s.ip) ?? { ip: s.ip, messages: 0, dmarc_pass: 0, dkim_aligned: 0, spf_aligned: 0 };
    for (const k of SOURCE_COUNTS) into[k] += Number(s[k]);
    byIp.set(s.ip, into);
  }
  return [...byIp.values()]
    .sort((a, b) => b.messages - a.messages || a.ip.localeCompare(b.ip))
    .map((s) => ({ ...s, postline: postline.has(s.ip) }));
}

/**
 * The domain's DMARC reports per reporter and day, newest first, or null when the domain is not the tenant's.
 * A source is `postline` when its address is one of `outboundIps`.
 */
export async function listDmarcReports(
  db: Database,
  tenant: Tenant,
  domainId: string,
  outboundIps: string[],
) {
  if (!(await findDomainById(db, tenant, domainId))) return null;
  const rows = await readModels(db)
    .selectFrom('dmarc_reports')
    .selectAll()
    .where('domain_id', '=', domainId)
    .where('org_id', '=', tenant.orgId)
    .where('mode', '=', tenant.mode)
    .orderBy('day', 'desc')
    .orderBy('reporter')
    .limit(MAX_DAYS * 4)
    .execute();
  const sources = new Map<string, SourceRow[]>();
  const oldest = rows.at(-1)?.day ?? '';
  const sourceRows = await readModels(db)
    .selectFrom('dmarc_report_sources')
    .selectAll()
    .where('domain_id', '=', domainId)
    .where('org_id', '=', tenant.orgId)
    .where('mode', '=', tenant.mode)
    .where('day', '>=', oldest)
    .execute();
  for (const s of sourceRows) groupInto(sources, s.report_row_id, s);
  const groups = new Map<string, Row[]>();
  for (const r of rows) groupInto(groups, `${r.day}|${r.reporter}`, r);
  const postline = new Set(outboundIps.map((ip) => ip.toLowerCase()));
  const data = [...groups.values()].slice(0, MAX_DAYS).map((group) => ({
    object: 'dmarc_report_day' as const,
    reporter: group[0].reporter,
    reporter_email: group[0].reporter_email,
    day: group[0].day,
    reports: group.length,
    ...Object.fromEntries(COUNTS.map((k) => [k, group.reduce((n, r) => n + Number(r[k]), 0)])),
    sources: mergeSources(
      group.flatMap((r) => sources.get(r.id) ?? []),
      postline,
    ),
  }));
  return { object: 'list' as const, data };
}

/** The live domain a DMARC report address names: any organization's (the address is the domain's own). */
export async function findDmarcDomain(db: Database, domainId: string) {
  const row = await readModels(db)
    .selectFrom('domains')
    .select(['id', 'org_id', 'mode', 'name'])
    .where('id', '=', domainId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return row ? { id: row.id, orgId: row.org_id, mode: row.mode, name: row.name } : null;
}
