import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { Database } from '../platform/db/database.ts';
import type { Mode } from '../platform/eventstore/types.ts';
import type { Tenant } from '../platform/tenancy.ts';
import type { ApiKeysTable, OrganizationPlansTable, OrganizationsTable } from './api-keys/api-keys.schema.ts';
import type { AudiencesTable } from './audiences/audiences.schema.ts';
import type { BroadcastsTable, BroadcastUnsubscribesTable } from './broadcasts/broadcasts.schema.ts';
import type {
  ContactImportInvalidRowsTable,
  ContactImportsTable,
} from './contact-imports/contact-imports.schema.ts';
import type { ContactAudiencesTable, ContactsTable, ContactTopicsTable } from './contacts/contacts.schema.ts';
import type { DmarcReportSourcesTable, DmarcReportsTable } from './dmarc-reports/dmarc-reports.schema.ts';
import type { DomainsTable } from './domains/domains.schema.ts';
import type {
  EmailAttachmentsTable,
  EmailLinkClicksTable,
  EmailsTable,
  EmailUnsubscribesTable,
  EmailUsageTable,
} from './emails/emails.schema.ts';
import type { ReceivedEmailsTable } from './received-emails/received-emails.schema.ts';
import type { SuppressionsTable } from './suppressions/suppressions.schema.ts';
import type { TemplatesTable, TemplateVersionsTable } from './templates/templates.schema.ts';
import type { TopicsTable } from './topics/topics.schema.ts';
import type { WebhooksTable } from './webhooks/webhooks.schema.ts';

/** Every read-model table by name, each typed beside its migration (`read-side/<resource>/schema.ts`). */
export interface ReadModels {
  organizations: OrganizationsTable;
  organization_plans: OrganizationPlansTable;
  api_keys: ApiKeysTable;
  audiences: AudiencesTable;
  broadcasts: BroadcastsTable;
  broadcast_unsubscribes: BroadcastUnsubscribesTable;
  contacts: ContactsTable;
  contact_imports: ContactImportsTable;
  contact_import_invalid_rows: ContactImportInvalidRowsTable;
  contact_audiences: ContactAudiencesTable;
  contact_topics: ContactTopicsTable;
  dmarc_reports: DmarcReportsTable;
  dmarc_report_sources: DmarcReportSourcesTable;
  domains: DomainsTable;
  emails: EmailsTable;
  email_attachments: EmailAttachmentsTable;
  email_link_clicks: EmailLinkClicksTable;
  email_unsubscribes: EmailUnsubscribesTable;
  email_usage: EmailUsageTable;
  received_emails: ReceivedEmailsTable;
  suppressions: SuppressionsTable;
  templates: TemplatesTable;
  template_versions: TemplateVersionsTable;
  topics: TopicsTable;
  webhooks: WebhooksTable;
}

/**
 * The database's query builder typed by the read models, so a misspelt table or column fails the type check.
 * `platform/db` cannot know these tables (it imports nothing above it); read-side code reaches them here.
 */
export const readModels = (db: Pick<Database, 'kysely'>): Kysely<ReadModels> => db.kysely;

/** Tables whose rows belong to an organization in one mode; `Deletable`: deleted by marking them (`deleted_at`). */
type TenantTable = {
  [T in keyof ReadModels]: ReadModels[T] extends { org_id: string; mode: Mode } ? T : never;
}[keyof ReadModels];
type DeletableTenantTable = {
  [T in TenantTable]: ReadModels[T] extends { deleted_at: unknown } ? T : never;
}[TenantTable];

type From<T extends keyof ReadModels> = SelectQueryBuilder<ReadModels, T, Record<never, never>>;

/**
 * The rows of `table` that are the tenant's (its organization and mode). Built untyped, as the builder cannot check
 * the columns of a table it does not know yet; `TenantTable` holds that it has them. The answer is typed again.
 */
export const tenantRows = <T extends TenantTable>(
  db: Pick<Database, 'kysely'>,
  table: T,
  { orgId, mode }: Tenant,
): From<T> =>
  (db.kysely as Kysely<any>)
    .selectFrom(table as string)
    .where('org_id', '=', orgId)
    .where('mode', '=', mode) as From<T>;

/** The tenant's rows of `table` that are not deleted. */
export const liveRows = <T extends DeletableTenantTable>(
  db: Pick<Database, 'kysely'>,
  table: T,
  tenant: Tenant,
) =>
  (tenantRows(db, table, tenant) as SelectQueryBuilder<any, any, any>).where(
    'deleted_at',
    'is',
    null,
  ) as From<T>;
