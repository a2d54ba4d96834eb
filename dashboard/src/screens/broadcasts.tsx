import { useEffect, useState } from 'preact/hooks';
import { del, get, listAll, modeOf, patch, post, type Schema, storedKey } from '../api.ts';
import { ActionButton } from '../components/action-button.tsx';
import { ActionForm } from '../components/action-form.tsx';
import { BackLink, NotLoaded } from '../components/detail.tsx';
import { Fact } from '../components/facts.tsx';
import { InputField, SelectField, TextAreaField, useFields } from '../components/field.tsx';
import { PagedTable, usePagedList } from '../components/paged-list.tsx';
import { navigate } from '../router.ts';
import { Badge, ErrorBox, FormError, Link, Status, Time, useAction, useLoad } from '../ui.tsx';
import { HtmlPreview, toLocalInput } from './email.tsx';

type Progress = Schema<'BroadcastProgress'>;
type SkipReason = keyof Progress['skipped'];
type CountName = keyof Schema<'BroadcastCounts'>;
type BroadcastJson = Schema<'Broadcast'>;
type BroadcastSummary = Schema<'BroadcastSummary'>;
interface Named {
  id: string;
  name: string;
}
type AudienceJson = Schema<'AudienceWithCount'>;
type TemplateSummary = Schema<'Template'>;

const SKIPPED: [SkipReason, string][] = [
  ['unsubscribed', 'unsubscribed'],
  ['suppressed', 'suppressed'],
  ['not_subscribed', 'not subscribed to the topic'],
  ['quota_exceeded', 'over the monthly quota'],
  ['render_failed', 'failed to render'],
];
const COUNTS: [CountName, string][] = [
  ['recipients', 'recipients'],
  ['queued', 'queued'],
  ['sent', 'sent'],
  ['delivered', 'delivered'],
  ['bounced', 'bounced'],
  ['complained', 'complained'],
  ['opened', 'opened'],
  ['clicked', 'clicked'],
  ['unsubscribed', 'unsubscribed'],
];

/** The audiences, topics and templates a broadcast can name, for the pickers and for showing names. */
function usePickers() {
  return useLoad(async () => {
    const [audiences, topics, templates] = await Promise.all([
      listAll<Named>('/audiences'),
      listAll<Named>('/topics'),
      listAll<TemplateSummary>('/templates'),
    ]);
    return { audiences: audiences.data, topics: topics.data, templates: templates.data };
  }, []);
}

const BACK: [string, string] = ['/broadcasts', 'Broadcasts'];
const nameOf = (list: Named[] | undefined, id: string | null) =>
  id ? (list?.find((x) => x.id === id)?.name ?? id) : null;

export function Broadcasts() {
  const list = usePagedList<BroadcastSummary>('/broadcasts', 20);
  const pickers = usePickers();
  return (
    <section>
      <h1>Broadcasts</h1>
      <p>
        <Link href="/broadcasts/new" class="button primary">
          New broadcast
        </Link>
      </p>
      <PagedTable
        loaded={list}
        what="broadcasts"
        empty="No broadcasts yet: one message to every contact of an audience."
        columns={['Name', 'Status', 'Recipients', 'Audience', 'When']}
        caption="Broadcasts, newest first"
        busy={list.loading}
      >
        {(b) => (
          <tr key={b.id} data-broadcast={b.id}>
            <td>
              <Link href={`/broadcasts/${b.id}`}>{b.name}</Link>
            </td>
            <td>
              <Badge value={b.status} />
            </td>
            <td class="recipients">{b.recipients}</td>
            <td>{nameOf(pickers.data?.audiences, b.audience_id)}</td>
            <td>
              <When b={b} />
            </td>
          </tr>
        )}
      </PagedTable>
    </section>
  );
}

function When({ b }: { b: BroadcastSummary }) {
  if (b.status === 'scheduled')
    return (
      <>
        for <Time value={b.send_at} />
      </>
    );
  if (b.sent_at) return <Time value={b.sent_at} />;
  if (b.started_at) return <Time value={b.started_at} />;
  if (b.canceled_at) return <Time value={b.canceled_at} />;
  return <Time value={b.created_at} />;
}

interface FormState {
  name: string;
  audience_id: string;
  topic_id: string;
  from: string;
  reply_to: string;
  subject: string;
  useTemplate: boolean;
  html: string;
  text: string;
  template_id: string;
}
const EMPTY: FormState = {
  name: '',
  audience_id: '',
  topic_id: '',
  from: '',
  reply_to: '',
  subject: '',
  useTemplate: false,
  html: '',
  text: '',
  template_id: '',
};
const FIELDS = [
  'name',
  'audience_id',
  'topic_id',
  'from',
  'reply_to',
  'subject',
  'html',
  'text',
  'template_id',
  'send_at',
];

function formOf(b: BroadcastJson): FormState {
  return {
    name: b.name,
    audience_id: b.audience_id,
    topic_id: b.topic_id ?? '',
    from: b.from,
    reply_to: b.reply_to.join(', '),
    subject: b.subject ?? '',
    useTemplate: b.template_id !== null,
    html: b.html ?? '',
    text: b.text ?? '',
    template_id: b.template_id ?? '',
  };
}

/** The request body for a form: every field, so a PATCH makes the draft exactly what the form shows. */
function bodyOf(f: FormState) {
  return {
    name: f.name,
    audience_id: f.audience_id,
    topic_id: f.topic_id || null,
    from: f.from,
    reply_to: f.reply_to
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    subject: f.subject || null,
    ...(f.useTemplate
      ? { template_id: f.template_id || null, html: null, text: null }
      : { template_id: null, html: f.html || null, text: f.text || null }),
  };
}

export function NewBroadcast() {
  return (
    <section>
      <BackLink back={BACK} />
      <h1>New broadcast</h1>
      <BroadcastForm
        initial={EMPTY}
        submitLabel="Create draft"
        run={async (body) => {
          const b = await post<BroadcastJson>('/broadcasts', body);
          navigate(`/broadcasts/${b.id}`);
        }}
      />
    </section>
  );
}

function BroadcastForm(props: {
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

const FOLLOW = new Set(['sending']);

export function Broadcast({ id }: { id: string }) {
  const loaded = useLoad(() => get<BroadcastJson>(`/broadcasts/${encodeURIComponent(id)}`), [id]);
  const pickers = usePickers();
  const b = loaded.data;
  // While it is being sent, and while its emails are on their way (queued, or sent without an outcome yet).
  // Every 2 s while emails are being made or queued; every 10 s while only outcomes are awaited (a delayed
  // recipient can keep an email `sent` for hours).
  const c = b?.counts;
  const busy = !!b && (FOLLOW.has(b.status) || (b.status === 'sent' && !!c && c.queued > 0));
  const unsettled = !!b && b.status === 'sent' && !!c && c.sent > c.delivered + c.bounced;
  const following = busy || unsettled;
  const every = busy ? 2000 : 10_000;
  useEffect(() => {
    if (!following) return;
    const t = setInterval(loaded.reload, every);
    return () => clearInterval(t);
  }, [following, every]);
  // A scheduled one is read again when its time comes (setTimeout takes up to about 24 days).
  useEffect(() => {
    if (b?.status !== 'scheduled' || !b.send_at) return;
    const delay = Math.max(Date.parse(b.send_at) - Date.now() + 1000, 1000);
    if (delay > 2 ** 31 - 1) return;
    const t = setTimeout(loaded.reload, delay);
    return () => clearTimeout(t);
  }, [b?.status, b?.send_at]);
  const act = useAction();
  const [dirty, setDirty] = useState(false);
  const [initial, setInitial] = useState<FormState | null>(null);
  useEffect(() => {
    if (b?.status === 'draft') setInitial(formOf(b));
  }, [b?.id, b?.updated_at]);

  if (!b) return <NotLoaded back={BACK} loaded={loaded} what="this broadcast" />;
  const p = pickers.data;
  const template = b.template_id ? p?.templates.find((t) => t.id === b.template_id) : undefined;
  return (
    <section>
      <BackLink back={BACK} />
      <h1>
        {b.name} <Badge value={b.status} />
      </h1>
      <ErrorBox error={loaded.error} />
      <dl class="facts">
        <Fact label="Status">
          <Badge value={b.status} />{' '}
          {following && (
            <span class="muted" role="status">
              following…
            </span>
          )}
        </Fact>
        <Fact label="Id">
          <code>{b.id}</code>
        </Fact>
        <Fact label="Audience">{nameOf(p?.audiences, b.audience_id)}</Fact>
        <Fact label="Topic">{nameOf(p?.topics, b.topic_id)}</Fact>
        <Fact label="Created" time={b.created_at} />
        <Fact label="Send at" time={b.send_at} />
        <Fact label="Started" time={b.started_at} />
        <Fact label="Sent" time={b.sent_at} />
        <Fact label="Canceled" time={b.canceled_at} />
      </dl>

      {b.status === 'draft' && initial && (
        <>
          <SendPanel b={b} dirty={dirty} act={act} onChange={loaded.reload} />
          <h2>Draft</h2>
          <BroadcastForm
            initial={initial}
            submitLabel="Save draft"
            otherError={act.error}
            onDirty={setDirty}
            run={async (body) => {
              await patch<BroadcastJson>(`/broadcasts/${b.id}`, body);
              loaded.reload();
            }}
          />
        </>
      )}
      {b.status === 'scheduled' && (
        <div class="row scheduled">
          <p>
            Goes out <Time value={b.send_at} /> (your time zone).
          </p>
          <ActionButton
            class="danger"
            action={act}
            run={() => post(`/broadcasts/${b.id}/cancel`)}
            onDone={loaded.reload}
          >
            Cancel broadcast
          </ActionButton>
          <ErrorBox error={act.error} />
        </div>
      )}

      {b.status !== 'draft' && (
        <>
          <h2>Progress</h2>
          <ul class="stats" aria-label="Progress">
            <li data-progress="contacts_processed">
              <strong>{b.progress.contacts_processed}</strong> contacts processed
            </li>
            {SKIPPED.map(([k, label]) => (
              <li key={k} data-skipped={k}>
                <strong>{b.progress.skipped[k]}</strong> skipped: {label}
              </li>
            ))}
          </ul>
          <h2>
            Counts{' '}
            <button type="button" class="small" onClick={loaded.reload}>
              Refresh
            </button>
          </h2>
          {b.counts && (
            <ul class="stats" aria-label="Counts">
              {COUNTS.map(([k, label]) => (
                <li key={k} data-count={k}>
                  <strong>{b.counts![k]}</strong> {label}
                </li>
              ))}
            </ul>
          )}
          <p class="muted">
            Each recipient's email is an ordinary email, listed under <Link href="/emails">Emails</Link>.
          </p>
          <h2>Content</h2>
          <dl class="facts">
            <Fact label="From">{b.from}</Fact>
            <Fact label="Reply-to">{b.reply_to.length > 0 && b.reply_to.join(', ')}</Fact>
            <Fact label="Subject">{b.subject ?? <span class="muted">the template's</span>}</Fact>
            <Fact label="Template">
              {b.template_id && (
                <Link href={`/templates/${b.template_id}`}>{template?.name ?? b.template_id}</Link>
              )}
            </Fact>
          </dl>
          {b.html && (
            <HtmlPreview html={b.html} title={`HTML source of ${b.name} (variables not filled in)`} />
          )}
          {b.text && <pre class="text-part">{b.text}</pre>}
        </>
      )}
    </section>
  );
}

function SendPanel(props: {
  b: BroadcastJson;
  dirty: boolean;
  act: ReturnType<typeof useAction>;
  onChange: () => void;
}) {
  const { b, act } = props;
  const schedule = useFields({ send_at: '' }, act.error);
  const live = modeOf(storedKey() ?? '') === 'live';
  const blocked = props.dirty || act.busy;
  return (
    <section class="send-panel" aria-labelledby="send-heading">
      <h2 id="send-heading">Send</h2>
      <p class="muted">
        {live ? (
          <>
            <strong>Live mode:</strong> real email to every contact of the audience who may receive it.
          </>
        ) : (
          <>
            <strong>Test mode:</strong> the simulator answers; nothing is delivered.
          </>
        )}{' '}
        {props.dirty && <strong>Save or discard your changes first.</strong>}
      </p>
      <div class="row">
        <ActionButton
          class="primary"
          action={act}
          disabled={blocked}
          confirm={`Send ${b.name} now${live ? ' to real recipients' : ' (test mode)'}?`}
          run={() => post(`/broadcasts/${b.id}/send`)}
          onDone={props.onChange}
        >
          Send now
        </ActionButton>
        <ActionButton
          class="danger"
          action={act}
          confirm={`Delete the draft ${b.name}?`}
          run={() => del(`/broadcasts/${b.id}`)}
          onDone={() => navigate('/broadcasts')}
        >
          Delete draft
        </ActionButton>
      </div>
      <ActionForm
        label="Schedule"
        action={act}
        run={async () => {
          await post(`/broadcasts/${b.id}/send`, {
            send_at: new Date(schedule.values.send_at).toISOString(),
          });
          props.onChange();
        }}
      >
        <InputField
          label="Send at (your time zone)"
          type="datetime-local"
          required
          min={toLocalInput(new Date().toISOString())}
          {...schedule.field('send_at')}
        />
        <button type="submit" disabled={blocked}>
          Schedule
        </button>
      </ActionForm>
      <FormError error={act.error} fields={FIELDS} />
    </section>
  );
}
