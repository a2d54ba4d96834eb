import type { Kysely } from 'kysely';
import type { Database } from '../platform/db/database.ts';
import type { ApiKeysTable, OrganizationsTable } from './api-keys/api-keys.schema.ts';
import type { AudiencesTable } from './audiences/audiences.schema.ts';
import type { BroadcastsTable } from './broadcasts/broadcasts.schema.ts';
import type {
  ContactImportInvalidRowsTable,
  ContactImportsTable,
} from './contact-imports/contact-imports.schema.ts';
import type { ContactAudiencesTable, ContactsTable, ContactTopicsTable } from './contacts/contacts.schema.ts';
import type { DomainsTable } from './domains/domains.schema.ts';
import type { EmailAttachmentsTable, EmailsTable, EmailUsageTable } from './emails/emails.schema.ts';
import type { ReceivedEmailsTable } from './received-emails/received-emails.schema.ts';
import type { SuppressionsTable } from './suppressions/suppressions.schema.ts';
import type { TemplatesTable, TemplateVersionsTable } from './templates/templates.schema.ts';
import type { TopicsTable } from './topics/topics.schema.ts';
import type { WebhooksTable } from './webhooks/webhooks.schema.ts';

/** Every read-model table by name, each typed beside its migration (`read-side/<resource>/schema.ts`). */
export interface ReadModels {
  organizations: OrganizationsTable;
  api_keys: ApiKeysTable;
  audiences: AudiencesTable;
  broadcasts: BroadcastsTable;
  contacts: ContactsTable;
  contact_imports: ContactImportsTable;
  contact_import_invalid_rows: ContactImportInvalidRowsTable;
  contact_audiences: ContactAudiencesTable;
  contact_topics: ContactTopicsTable;
  domains: DomainsTable;
  emails: EmailsTable;
  email_attachments: EmailAttachmentsTable;
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
