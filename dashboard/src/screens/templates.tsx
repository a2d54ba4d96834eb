import { useEffect, useState } from 'preact/hooks';
import { del, get, type List, patch, post, type Schema } from '../api.ts';
import { ActionButton } from '../components/action-button.tsx';
import { ActionForm } from '../components/action-form.tsx';
import { BackLink, NotLoaded } from '../components/detail.tsx';
import { InputField, TextAreaField, useFields } from '../components/field.tsx';
import { PagedTable } from '../components/paged-list.tsx';
import { navigate } from '../router.ts';
import { Badge, ErrorBox, FormError, Link, Status, Time, useAction, useLoad } from '../ui.tsx';
import { HtmlPreview } from './email.tsx';

type Variable = Version['variables'][number];
type Version = Schema<'TemplateVersion'>;
type TemplateJson = Schema<'Template'>;
type Rendered = Schema<'RenderedTemplate'>;

export function Templates() {
  const list = useLoad(() => get<List<TemplateJson>>('/templates?limit=100'), []);
  const create = useAction();
  const form = useFields({ name: '' }, create.error);
  return (
    <section>
      <h1>Templates</h1>
      <ActionForm
        label="New template"
        action={create}
        submit="New template"
        submitClass="primary"
        fields={['name']}
        run={async () => {
          const t = await post<TemplateJson>('/templates', {
            name: form.values.name,
            subject: 'Hello {{name}}',
            html: '<p>Hello {{name}}</p>',
            variables: [{ name: 'name', type: 'string', required: false }],
          });
          navigate(`/templates/${t.id}`);
        }}
      >
        <InputField label="Template name" required {...form.field('name')} />
      </ActionForm>
      <PagedTable
        loaded={list}
        what="templates"
        empty="No templates yet."
        columns={['Name', 'Status', 'Updated']}
      >
        {(t) => (
          <tr key={t.id}>
            <td>
              <Link href={`/templates/${t.id}`}>{t.name}</Link>
            </td>
            <td>
              <Badge value={t.status} /> {t.draft && t.published && <span class="muted">draft pending</span>}
            </td>
            <td>
              <Time value={t.updated_at} />
            </td>
          </tr>
        )}
      </PagedTable>
    </section>
  );
}

const BACK: [string, string] = ['/templates', 'Templates'];
const EDITED = ['name', 'subject', 'html', 'text', 'variables'];

export function Template({ id }: { id: string }) {
  const loaded = useLoad(() => get<TemplateJson>(`/templates/${encodeURIComponent(id)}`), [id]);
  const versions = useLoad(
    () => get<List<Version>>(`/templates/${encodeURIComponent(id)}/versions?limit=20`),
    [id],
  );
  const [t, setT] = useState<TemplateJson | null>(null);
  const template = t ?? loaded.data;
  const newest = template ? (template.draft ?? template.published) : null;
  const [preview, setPreview] = useState<Rendered | null>(null);
  const save = useAction();
  const act = useAction();
  const render = useAction();
  const form = useFields({ name: '', subject: '', html: '', text: '', variables: '[]' }, save.error);
  const sample = useFields({ template_data: '{"name": "Ada"}' }, render.error);

  useEffect(() => {
    if (!template || !newest) return;
    form.set({
      name: template.name,
      subject: newest.subject,
      html: newest.html ?? '',
      text: newest.text ?? '',
      variables: JSON.stringify(newest.variables),
    });
  }, [template?.id, newest?.id]);

  // The preview renders the newest version (the draft if there is one) with the sample data.
  const renderPreview = (versionId: string | undefined) =>
    render.run(async () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(sample.values.template_data || '{}');
      } catch {
        throw new Error('`template_data`: the sample data is not valid JSON.');
      }
      setPreview(
        await post<Rendered>('/templates/render', {
          template_id: id,
          version_id: versionId,
          template_data: parsed,
        }),
      );
    });
  useEffect(() => {
    if (newest) renderPreview(newest.id);
  }, [newest?.id]);

  if (!template) return <NotLoaded back={BACK} loaded={loaded} what="this template" />;

  const onSave = async () => {
    const f = form.values;
    let variables: Variable[];
    try {
      variables = JSON.parse(f.variables || '[]');
    } catch {
      throw new Error('`variables`: not valid JSON (a list like [{"name": "first_name"}]).');
    }
    const body: Record<string, unknown> = {
      subject: f.subject,
      html: f.html || null,
      text: f.text || null,
      variables,
    };
    if (f.name !== template.name) body.name = f.name;
    setT(await patch<TemplateJson>(`/templates/${template.id}`, body));
    versions.reload();
  };
  return (
    <section>
      <BackLink back={BACK} />
      <h1>
        {template.name} <Badge value={template.status} />
      </h1>
      <p class="muted">
        {template.published ? `Published: v${template.published.version}. ` : 'Not published yet. '}
        {template.draft ? `Draft: v${template.draft.version}.` : 'No draft.'}
      </p>
      <div class="row">
        <ActionButton
          class="primary"
          action={act}
          disabled={act.busy || !template.draft}
          run={async () => {
            setT(await post<TemplateJson>(`/templates/${template.id}/publish`));
            versions.reload();
          }}
        >
          Publish draft
        </ActionButton>
        <ActionButton
          action={act}
          run={async () => {
            const copy = await post<TemplateJson>(`/templates/${template.id}/duplicate`);
            setT(null);
            navigate(`/templates/${copy.id}`);
          }}
        >
          Duplicate
        </ActionButton>
        <ActionButton
          class="danger"
          action={act}
          confirm={`Delete the template ${template.name}?`}
          run={() => del(`/templates/${template.id}`)}
          onDone={() => navigate('/templates')}
        >
          Delete
        </ActionButton>
      </div>
      <ErrorBox error={act.error} />
      <div class="editor">
        <ActionForm class="stack" label="Edit template" action={save} fields={EDITED} run={onSave}>
          <InputField label="Name" {...form.field('name')} />
          <InputField label="Subject" {...form.field('subject')} />
          <TextAreaField label="HTML" rows={10} {...form.field('html')} />
          <TextAreaField label="Text" rows={4} {...form.field('text')} />
          <TextAreaField
            label="Variables (JSON)"
            rows={3}
            hint='[{"name": "first_name", "type": "string", "required": true}]'
            {...form.field('variables')}
          />
          <button type="submit" disabled={save.busy}>
            {save.busy ? 'Saving…' : 'Save draft'}
          </button>
        </ActionForm>
        <div class="stack" aria-live="polite">
          <h2>Preview {newest && <span class="muted">(v{newest.version})</span>}</h2>
          <TextAreaField
            label="Sample data (JSON)"
            rows={3}
            onBlur={() => renderPreview(newest?.id)}
            {...sample.field('template_data')}
          />
          <FormError error={render.error} fields={['template_data']} />
          {preview && (
            <>
              <p>
                <strong>Subject:</strong> <span class="preview-subject">{preview.subject}</span>
              </p>
              {preview.html !== null && <HtmlPreview html={preview.html} title="Template preview" />}
              {preview.text !== null && <pre class="text-part">{preview.text}</pre>}
            </>
          )}
        </div>
      </div>
      <h2>Versions</h2>
      <Status loaded={versions} what="versions" />
      {versions.data && (
        <ol class="versions">
          {versions.data.data.map((v) => (
            <li key={v.id}>
              v{v.version} <Badge value={v.status} /> <Time value={v.created_at} /> — {v.subject}{' '}
              <button type="button" class="small" onClick={() => renderPreview(v.id)}>
                Preview
              </button>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
