import { useEffect } from 'preact/hooks';
import { get, type Schema } from '../../api.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { InputField, SelectField, TextAreaField, useFields } from '../../components/field.tsx';
import { Status, useAction, useLoad } from '../../ui.tsx';
import { bodyOf, FIELDS, type FormState } from './form-state.ts';
import { usePickers } from './pickers.ts';

type AudienceJson = Schema<'AudienceWithCount'>;

export function BroadcastForm(props: {
  initial: FormState;
  submitLabel: string;
  /** An error from elsewhere on the page (sending) that may name one of these fields. */
  otherError?: unknown;
  run: (body: ReturnType<typeof bodyOf>) => Promise<unknown>;
  onDirty?: (dirty: boolean) => void;
}) {
  const pickers = usePickers();
  const save = useAction();
  const form = useFields(props.initial, save.error ?? props.otherError);
  useEffect(() => form.set(props.initial), [props.initial]);
  const f = form.values;
  const dirty = JSON.stringify(bodyOf(f)) !== JSON.stringify(bodyOf(props.initial));
  useEffect(() => props.onDirty?.(dirty), [dirty]);
  const audience = useLoad(
    () =>
      f.audience_id
        ? get<AudienceJson>(`/audiences/${encodeURIComponent(f.audience_id)}`)
        : Promise.resolve(null),
    [f.audience_id],
  );
  const p = pickers.data;
  const options = (list: { id: string; name: string }[] | undefined) =>
    (list ?? []).map((x) => ({ value: x.id, label: x.name }));
  return (
    <ActionForm
      class="stack broadcast-form"
      label="Broadcast"
      action={save}
      fields={FIELDS}
      run={() => props.run(bodyOf(f))}
    >
      <Status loaded={pickers} what="audiences, topics and templates" />
      {p && p.audiences.length === 0 && (
        <div class="notice warn">
          No audiences yet. A broadcast goes to an audience: create one and add contacts with{' '}
          <code>POST /v1/audiences</code> and{' '}
          <code>
            PUT /v1/audiences/{'{id}'}/contacts/{'{contact_id}'}
          </code>
          .
        </div>
      )}
      <InputField
        label="Name"
        hint="For you; recipients do not see it."
        required
        maxLength={200}
        {...form.field('name')}
      />
      <SelectField
        label="Audience"
        hint={
          audience.data
            ? `${audience.data.contacts} contact${audience.data.contacts === 1 ? '' : 's'} now; unsubscribed and suppressed ones are skipped.`
            : undefined
        }
        required
        none="Choose an audience…"
        options={options(p?.audiences)}
        {...form.field('audience_id')}
      />
      <SelectField
        label="Topic (optional)"
        hint="With a topic, only contacts subscribed to it receive the broadcast."
        none="No topic"
        options={options(p?.topics)}
        {...form.field('topic_id')}
      />
      <InputField label="From" hint="Acme <news@acme.example>" required {...form.field('from')} />
      <InputField
        label="Reply-to (optional)"
        hint="Addresses separated by commas."
        {...form.field('reply_to')}
      />
      <fieldset class="choice">
        <legend>Content</legend>
        <label>
          <input
            type="radio"
            name="content"
            checked={!f.useTemplate}
            onChange={() => form.set({ useTemplate: false })}
          />{' '}
          Write it here
        </label>
        <label>
          <input
            type="radio"
            name="content"
            checked={f.useTemplate}
            onChange={() => form.set({ useTemplate: true })}
          />{' '}
          Use a template
        </label>
      </fieldset>
      <p class="muted">
        Sources may use <code>{'{{contact.first_name}}'}</code>, <code>{'{{contact.email}}'}</code>,{' '}
        <code>{'{{contact.properties.…}}'}</code> and <code>{'{{unsubscribe_url}}'}</code>. Every email gets a
        footer with the domain's impressum and an unsubscribe link.
      </p>
      {f.useTemplate && (
        <SelectField
          label="Template"
          hint="It must be published before the broadcast is sent."
          required
          none="Choose a template…"
          options={(p?.templates ?? []).map((t) => ({
            value: t.id,
            label: `${t.name}${t.published ? '' : ' (not published)'}`,
          }))}
          {...form.field('template_id')}
        />
      )}
      <InputField
        label={f.useTemplate ? "Subject (optional: the template's otherwise)" : 'Subject'}
        required={!f.useTemplate}
        {...form.field('subject')}
      />
      {!f.useTemplate && (
        <>
          <TextAreaField label="HTML" rows={8} {...form.field('html')} />
          <TextAreaField label="Text" rows={4} {...form.field('text')} />
        </>
      )}
      <div class="row">
        <button type="submit" class="primary" disabled={save.busy || (!dirty && !!props.onDirty)}>
          {save.busy ? 'Saving…' : props.submitLabel}
        </button>
        {dirty && props.onDirty && (
          <button type="button" onClick={() => form.set(props.initial)}>
            Discard changes
          </button>
        )}
      </div>
    </ActionForm>
  );
}
