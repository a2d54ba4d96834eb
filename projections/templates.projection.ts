import type { Transaction } from '../platform/db/database.ts';
import type { TemplateEvent, TemplateVersion } from '../write-side/templates/template.events.ts';
import type { Projection } from './projection.ts';

async function insertVersion(
  tx: Transaction,
  templateId: string,
  orgId: string,
  mode: string,
  v: TemplateVersion,
) {
  await tx.query(
    `INSERT INTO template_versions (id, template_id, org_id, mode, version, subject, html, text, variables, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
    [
      v.versionId,
      templateId,
      orgId,
      mode,
      v.number,
      v.subject,
      v.html,
      v.text,
      JSON.stringify(v.variables),
      v.createdAt,
    ],
  );
}

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
        const source = e.type === 'TemplateDuplicated' ? e.data.sourceTemplateId : null;
        await tx.query(
          `INSERT INTO templates (id, org_id, mode, name, engine, latest_version, duplicated_from, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) ON CONFLICT (id) DO NOTHING`,
          [d.templateId, d.orgId, d.mode, d.name, d.engine, d.version.number, source, d.createdAt],
        );
        await insertVersion(tx, d.templateId, d.orgId, d.mode, d.version);
        return;
      }
      case 'TemplateRenamed':
        await tx.query('UPDATE templates SET name = $2, updated_at = $3 WHERE id = $1', [
          e.data.templateId,
          e.data.name,
          e.data.renamedAt,
        ]);
        return;
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
      case 'TemplatePublished':
        await tx.query(
          `UPDATE templates SET published_version = $2, published_at = $3, updated_at = $3 WHERE id = $1`,
          [e.data.templateId, e.data.number, e.data.publishedAt],
        );
        await tx.query('UPDATE template_versions SET published_at = $2 WHERE id = $1', [
          e.data.versionId,
          e.data.publishedAt,
        ]);
        return;
      case 'TemplateDeleted':
        await tx.query('UPDATE templates SET deleted_at = $2 WHERE id = $1', [
          e.data.templateId,
          e.data.deletedAt,
        ]);
        return;
    }
  },
};
