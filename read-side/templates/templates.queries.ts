import type { Selectable } from 'kysely';
import type { TemplateVariable } from '../../domain/templates/template.events.ts';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, listPage } from '../pagination.ts';
import { liveRows, readModels } from '../read-models.ts';
import type { TemplatesTable, TemplateVersionsTable } from './templates.schema.ts';

const TEMPLATE_COLUMNS = [
  'id',
  'name',
  'engine',
  'latest_version',
  'published_version',
  'published_at',
  'duplicated_from',
  'created_at',
  'updated_at',
] as const;

const VERSION_COLUMNS = [
  'id',
  'template_id',
  'version',
  'subject',
  'html',
  'text',
  'variables',
  'created_at',
  'published_at',
] as const;

type TemplateRow = Pick<Selectable<TemplatesTable>, (typeof TEMPLATE_COLUMNS)[number]>;
type VersionRow = Pick<Selectable<TemplateVersionsTable>, (typeof VERSION_COLUMNS)[number]>;

const versionJson = (v: VersionRow) => ({
  id: v.id,
  version: v.version,
  subject: v.subject,
  html: v.html,
  text: v.text,
  variables: v.variables,
  created_at: iso(v.created_at),
  published_at: iso(v.published_at),
});

/** A version is the published one, the pending draft (newer than what is published), or superseded. */
const versionStatus = (t: TemplateRow, n: number) =>
  n === t.published_version ? 'published' : n === t.latest_version ? 'draft' : 'superseded';

function templateJson(t: TemplateRow, versions: VersionRow[]) {
  const find = (n: number | null) => versions.find((v) => v.template_id === t.id && v.version === n);
  const draft = t.latest_version !== t.published_version ? find(t.latest_version) : undefined;
  const published = t.published_version !== null ? find(t.published_version) : undefined;
  return {
    object: 'template',
    id: t.id,
    name: t.name,
    engine: t.engine,
    /** `published` once any version is published (it stays usable while a newer draft is edited). */
    status: t.published_version === null ? 'draft' : 'published',
    draft: draft ? versionJson(draft) : null,
    published: published ? versionJson(published) : null,
    duplicated_from: t.duplicated_from,
    created_at: iso(t.created_at),
    updated_at: iso(t.updated_at),
  };
}

export type TemplateJson = ReturnType<typeof templateJson>;

/** The draft and published versions of these templates, in one query. */
async function currentVersions(db: Database, templateIds: string[]): Promise<VersionRow[]> {
  if (!templateIds.length) return [];
  const { rows } = await db.query<VersionRow>(
    `SELECT ${VERSION_COLUMNS.map((c) => `v.${c}`).join(', ')}
       FROM template_versions v JOIN templates t ON t.id = v.template_id
      WHERE t.id = ANY($1) AND (v.version = t.latest_version OR v.version = t.published_version)`,
    [templateIds],
  );
  return rows;
}

const liveTemplates = (db: Database, tenant: Tenant) =>
  liveRows(db, 'templates', tenant).select([...TEMPLATE_COLUMNS]);

async function findTemplateRow(
  db: Database,
  { orgId, mode }: Tenant,
  templateId: string,
): Promise<TemplateRow | undefined> {
  return liveTemplates(db, { orgId, mode }).where('id', '=', templateId).executeTakeFirst();
}

export async function getTemplate(
  db: Database,
  { orgId, mode }: Tenant,
  templateId: string,
): Promise<TemplateJson | null> {
  const row = await findTemplateRow(db, { orgId, mode }, templateId);
  return row ? templateJson(row, await currentVersions(db, [row.id])) : null;
}

export async function listTemplates(db: Database, { orgId, mode }: Tenant, page: PageParams) {
  return listPage(liveTemplates(db, { orgId, mode }), page, async (rows) => {
    const versions = await currentVersions(
      db,
      rows.map((r) => r.id),
    );
    return rows.map((r) => templateJson(r, versions));
  });
}

/** Every version of a template, newest first; null when the template is not the caller's. */
export async function listTemplateVersions(
  db: Database,
  { orgId, mode }: Tenant,
  templateId: string,
  page: PageParams,
) {
  const template = await findTemplateRow(db, { orgId, mode }, templateId);
  if (!template) return null;
  const versions = readModels(db)
    .selectFrom('template_versions')
    .select([...VERSION_COLUMNS])
    .where('template_id', '=', templateId);
  // By number: ids made on other machines, or in one millisecond by two processes, need not sort as the versions.
  return listPage(
    versions,
    page,
    (rows) =>
      rows.map((v) => ({
        object: 'template_version',
        template_id: v.template_id,
        status: versionStatus(template, v.version),
        ...versionJson(v),
      })),
    { by: 'version' },
  );
}

export interface PublishedVersion {
  templateId: string;
  versionId: string;
  version: number;
  subject: string;
  html: string | null;
  text: string | null;
  variables: TemplateVariable[];
}

/**
 * The published version of a template: `not_found`, `not_published`, or the version to render. With `versionId`,
 * that version of the template instead, whatever its status (a preview of a draft); `not_found` when the template
 * has no such version.
 */
export async function findPublishedVersion(
  db: Database,
  { orgId, mode }: Tenant,
  templateId: string,
  versionId?: string,
): Promise<
  { status: 'not_found' } | { status: 'not_published' } | { status: 'published'; version: PublishedVersion }
> {
  const template = await findTemplateRow(db, { orgId, mode }, templateId);
  if (!template) return { status: 'not_found' };
  if (versionId === undefined && template.published_version === null) return { status: 'not_published' };
  let query = readModels(db)
    .selectFrom('template_versions')
    .select(['id', 'version', 'subject', 'html', 'text', 'variables'])
    .where('template_id', '=', templateId);
  query =
    versionId === undefined
      ? query.where('version', '=', template.published_version)
      : query.where('id', '=', versionId);
  const v = await query.executeTakeFirst();
  if (!v) return { status: versionId === undefined ? 'not_published' : 'not_found' };
  return {
    status: 'published',
    version: {
      templateId,
      versionId: v.id,
      version: v.version,
      subject: v.subject,
      html: v.html,
      text: v.text,
      variables: v.variables,
    },
  };
}
