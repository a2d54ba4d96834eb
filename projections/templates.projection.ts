import type { TemplateEvent, TemplateVersion } from '../domain/templates/template.events.ts';
import type { Transaction } from '../platform/db/database.ts';
import type { Projection } from './projection.ts';
import { insertRow, updateRow } from './rows.ts';

const insertVersion = (
  tx: Transaction,
  templateId: string,
  orgId: string,
  mode: string,
  v: TemplateVersion,
) =>
  insertRow(tx, 'template_versions', {
    id: v.versionId,
    template_id: templateId,
    org_id: orgId,
    mode,
    version: v.number,
    subject: v.subject,
    html: v.html,
    text: v.text,
    variables: JSON.stringify(v.variables),
    created_at: v.createdAt,
  });

/** Templates and their versions: what GET /templates, the render endpoint and the sending path read. */
export const templatesProjection: Projection<TemplateEvent> = {
  name: 'templates',
  tables: ['templates', 'template_versions'],
  types: [
    'TemplateCreated',
    'TemplateDuplicated',
    'TemplateRenamed',
    'TemplateDraftUpdated',
    'TemplatePublished',
    'TemplateDeleted',
  ],
  async apply(tx, e) {
    switch (e.type) {
      case 'TemplateCreated':
      case 'TemplateDuplicated': {
        const d = e.data;
        await insertRow(tx, 'templates', {
          id: d.templateId,
          org_id: d.orgId,
          mode: d.mode,
          name: d.name,
          engine: d.engine,
          latest_version: d.version.number,
          duplicated_from: e.type === 'TemplateDuplicated' ? e.data.sourceTemplateId : null,
          created_at: d.createdAt,
          updated_at: d.createdAt,
        });
        return insertVersion(tx, d.templateId, d.orgId, d.mode, d.version);
      }
      case 'TemplateRenamed':
        return updateRow(tx, 'templates', e.data.templateId, {
          name: e.data.name,
          updated_at: e.data.renamedAt,
        });
      case 'TemplateDraftUpdated': {
        const { rows } = await tx.query<{ org_id: string; mode: string }>(
          'SELECT org_id, mode FROM templates WHERE id = $1',
          [e.data.templateId],
        );
        if (!rows[0]) return;
        await insertVersion(tx, e.data.templateId, rows[0].org_id, rows[0].mode, e.data.version);
        // GREATEST: a replayed older event never moves the pointer back.
        await tx.query(
          `UPDATE templates SET latest_version = GREATEST(latest_version, $2), updated_at = $3 WHERE id = $1`,
          [e.data.templateId, e.data.version.number, e.data.version.createdAt],
        );
        return;
      }
      case 'TemplatePublished': {
        const d = e.data;
        await updateRow(tx, 'templates', d.templateId, {
          published_version: d.number,
          published_at: d.publishedAt,
          updated_at: d.publishedAt,
        });
        return updateRow(tx, 'template_versions', d.versionId, { published_at: d.publishedAt });
      }
      case 'TemplateDeleted':
        return updateRow(tx, 'templates', e.data.templateId, { deleted_at: e.data.deletedAt });
    }
  },
};
