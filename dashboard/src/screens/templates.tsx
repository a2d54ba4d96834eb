import { useEffect, useState } from 'preact/hooks';
import { del, get, type List, patch, post } from '../api.ts';
import { navigate } from '../router.ts';
import { Badge, Empty, ErrorBox, Field, FormError, Link, Status, Time, useAction, useLoad } from '../ui.tsx';
import { HtmlPreview } from './email.tsx';

interface Variable {
  name: string;
  type: string;
  required: boolean;
}
interface Version {
  id: string;
  version: number;
  subject: string;
  html: string | null;
  text: string | null;
  variables: Variable[];
  status?: string;
  created_at: string;
}
interface TemplateJson {
  id: string;
  name: string;
  status: string;
  draft: Version | null;
  published: Version | null;
  created_at: string;
  updated_at: string;
}
interface Rendered {
  subject: string;
  html: string | null;
  text: string | null;
  template_version_id: string;
}

export function Templates() {
  const list = useLoad(() => get<List<TemplateJson>>('/templates?limit=100'), []);
  const create = useAction();
  const [name, setName] = useState('');
  return (
    <section>
      <h1>Templates</h1>
      <form
        class="inline-form"
        aria-label="New template"
        onSubmit={(e) => {
          e.preventDefault();
          create.run(async () => {
            const t = await post<TemplateJson>('/templates', {
              name,
              subject: 'Hello {{name}}',
              html: '<p>Hello {{name}}</p>',
              variables: [{ name: 'name', type: 'string', required: false }],
            });
            navigate(`/templates/${t.id}`);
          });
        }}
      >
        <Field label="Template name" name="name" error={create.error}>
          {(id, describedBy, invalid) => (
            <input
              id={id}
              value={name}
              required
              aria-describedby={describedBy}
              aria-invalid={invalid}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          )}
        </Field>
        <button type="submit" class="primary" disabled={create.busy}>
          New template
        </button>
        <FormError error={create.error} fields={['name']} />
      </form>
      <Status loaded={list} what="templates" />
      {list.data && list.data.data.length === 0 && <Empty>No templates yet.</Empty>}
      {list.data && list.data.data.length > 0 && (
        <div class="table-wrap">
          <table class="list">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((t) => (
                <tr key={t.id}>
                  <td>
                    <Link href={`/templates/${t.id}`}>{t.name}</Link>
                  </td>
                  <td>
                    <Badge value={t.status} />{' '}
                    {t.draft && t.published && <span class="muted">draft pending</span>}
                  </td>
                  <td>
                    <Time value={t.updated_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

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
  const [form, setForm] = useState({ name: '', subject: '', html: '', text: '', variables: '[]' });
  const [data, setData] = useState('{"name": "Ada"}');
  const [preview, setPreview] = useState<Rendered | null>(null);
  const save = useAction();
  const act = useAction();
  const render = useAction();

  useEffect(() => {
    if (!template || !newest) return;
    setForm({
      name: template.name,
      subject: newest.subject,
      html: newest.html ?? '',
      text: newest.text ?? '',
      variables: JSON.stringify(newest.variables),
    });
  }, [template?.id, newest?.id]);

  // The preview renders the newest version (the draft if there is one) with the sample data.
  const renderPreview = (versionId: string | undefined, sample = data) =>
    render.run(async () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(sample || '{}');
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

  if (!template)
    return (
      <section>
        <p>
          <Link href="/templates">← Templates</Link>
        </p>
        <Status loaded={loaded} what="this template" />
      </section>
    );

  const onSave = (e: Event) => {
    e.preventDefault();
    save.run(async () => {
      let variables: Variable[];
      try {
        variables = JSON.parse(form.variables || '[]');
      } catch {
        throw new Error('`variables`: not valid JSON (a list like [{"name": "first_name"}]).');
      }
      const body: Record<string, unknown> = {
        subject: form.subject,
        html: form.html || null,
        text: form.text || null,
        variables,
      };
      if (form.name !== template.name) body.name = form.name;
      setT(await patch<TemplateJson>(`/templates/${template.id}`, body));
      versions.reload();
    });
  };
  return (
    <section>
      <p>
        <Link href="/templates">← Templates</Link>
      </p>
      <h1>
        {template.name} <Badge value={template.status} />
      </h1>
      <p class="muted">
        {template.published ? `Published: v${template.published.version}. ` : 'Not published yet. '}
        {template.draft ? `Draft: v${template.draft.version}.` : 'No draft.'}
      </p>
      <div class="row">
        <button
          type="button"
          class="primary"
          disabled={act.busy || !template.draft}
          onClick={() =>
            act.run(async () => {
              setT(await post<TemplateJson>(`/templates/${template.id}/publish`));
              versions.reload();
            })
          }
        >
          Publish draft
        </button>
        <button
          type="button"
          disabled={act.busy}
          onClick={() =>
            act.run(async () => {
              const copy = await post<TemplateJson>(`/templates/${template.id}/duplicate`);
              setT(null);
              navigate(`/templates/${copy.id}`);
            })
          }
        >
          Duplicate
        </button>
        <button
          type="button"
          class="danger"
          disabled={act.busy}
          onClick={() =>
            confirm(`Delete the template ${template.name}?`) &&
            act.run(async () => {
              await del(`/templates/${template.id}`);
              navigate('/templates');
            })
          }
        >
          Delete
        </button>
      </div>
      {act.error ? <ErrorBox error={act.error} /> : null}
      <div class="editor">
        <form class="stack" aria-label="Edit template" onSubmit={onSave}>
          <Field label="Name" name="name" error={save.error}>
            {(fid, d, inv) => (
              <input
                id={fid}
                value={form.name}
                aria-describedby={d}
                aria-invalid={inv}
                onInput={(e) => setForm({ ...form, name: e.currentTarget.value })}
              />
            )}
          </Field>
          <Field label="Subject" name="subject" error={save.error}>
            {(fid, d, inv) => (
              <input
                id={fid}
                value={form.subject}
                aria-describedby={d}
                aria-invalid={inv}
                onInput={(e) => setForm({ ...form, subject: e.currentTarget.value })}
              />
            )}
          </Field>
          <Field label="HTML" name="html" error={save.error}>
            {(fid, d, inv) => (
              <textarea
                id={fid}
                rows={10}
                class="code"
                value={form.html}
                aria-describedby={d}
                aria-invalid={inv}
                onInput={(e) => setForm({ ...form, html: e.currentTarget.value })}
              />
            )}
          </Field>
          <Field label="Text" name="text" error={save.error}>
            {(fid, d, inv) => (
              <textarea
                id={fid}
                rows={4}
                class="code"
                value={form.text}
                aria-describedby={d}
                aria-invalid={inv}
                onInput={(e) => setForm({ ...form, text: e.currentTarget.value })}
              />
            )}
          </Field>
          <Field
            label="Variables (JSON)"
            name="variables"
            error={save.error}
            hint='[{"name": "first_name", "type": "string", "required": true}]'
          >
            {(fid, d, inv) => (
              <textarea
                id={fid}
                rows={3}
                class="code"
                value={form.variables}
                aria-describedby={d}
                aria-invalid={inv}
                onInput={(e) => setForm({ ...form, variables: e.currentTarget.value })}
              />
            )}
          </Field>
          <button type="submit" disabled={save.busy}>
            {save.busy ? 'Saving…' : 'Save draft'}
          </button>
          <FormError error={save.error} fields={EDITED} />
        </form>
        <div class="stack" aria-live="polite">
          <h2>Preview {newest && <span class="muted">(v{newest.version})</span>}</h2>
          <Field label="Sample data (JSON)" name="template_data" error={render.error}>
            {(fid, d, inv) => (
              <textarea
                id={fid}
                rows={3}
                class="code"
                value={data}
                aria-describedby={d}
                aria-invalid={inv}
                onInput={(e) => setData(e.currentTarget.value)}
                onBlur={() => renderPreview(newest?.id)}
              />
            )}
          </Field>
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
