import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { get, type List, patch, post, type Schema } from '../api.ts';
import { ActionButton } from '../components/action-button.tsx';
import { ActionForm } from '../components/action-form.tsx';
import { BackLink, NotLoaded } from '../components/detail.tsx';
import { DownloadLink } from '../components/download-link.tsx';
import { Fact } from '../components/facts.tsx';
import { InputField, useFields } from '../components/field.tsx';
import { PagedList, Table } from '../components/paged-list.tsx';
import { Badge, Empty, Status, Time, useAction, useLoad } from '../ui.tsx';

type FullEmail = Schema<'Email'>;
type EmailEvent = Schema<'EmailEventList'>['data'][number];
type Attachment = Schema<'Attachment'>;

const BACK: [string, string] = ['/emails', 'Emails'];
const SETTLED = new Set(['delivered', 'bounced', 'complained', 'canceled']);

/** One email: status and recipients, its history, its parts, and what can still be done to a scheduled one. */
export function Email({ id }: { id: string }) {
  const email = useLoad(() => get<FullEmail>(`/emails/${encodeURIComponent(id)}`), [id]);
  const events = useLoad(() => get<List<EmailEvent>>(`/emails/${encodeURIComponent(id)}/events`), [id]);
  const attachments = useLoad(
    () => get<List<Attachment>>(`/emails/${encodeURIComponent(id)}/attachments`),
    [id],
  );
  const status = email.data?.status;
  // While the email is on its way, follow it.
  useEffect(() => {
    if (!status || SETTLED.has(status)) return;
    const t = setInterval(() => {
      email.reload();
      events.reload();
    }, 2000);
    return () => clearInterval(t);
  }, [status]);

  if (!email.data) return <NotLoaded back={BACK} loaded={email} what="this email" />;
  const e = email.data;
  return (
    <section>
      <BackLink back={BACK} />
      <h1>{e.subject || '(no subject)'}</h1>
      <dl class="facts">
        <Fact label="Status">
          <Badge value={e.status} /> {e.opens > 0 && <span class="muted">opened {e.opens}×</span>}{' '}
          {e.clicks > 0 && <span class="muted">clicked {e.clicks}×</span>}
        </Fact>
        <Fact label="Id">
          <code>{e.id}</code>
        </Fact>
        <Fact label="From">{e.from}</Fact>
        <Fact label="To">{e.to.join(', ')}</Fact>
        <Fact label="Cc">{!!e.cc?.length && e.cc.join(', ')}</Fact>
        <Fact label="Bcc">{!!e.bcc?.length && e.bcc.join(', ')}</Fact>
        <Fact label="Created" time={e.created_at} />
        <Fact label="Send at" time={e.send_at} />
        <Fact label="Tags">{e.tags.length > 0 && e.tags.join(', ')}</Fact>
        <Fact label="Suppressed">
          {e.suppressed_recipients.length > 0 &&
            `${e.suppressed_recipients.join(', ')} (not sent: on the suppression list)`}
        </Fact>
      </dl>
      {e.status === 'scheduled' && <Schedule email={e} onChange={email.reload} />}

      <h2>Recipients</h2>
      <Table items={e.recipients} columns={['Recipient', 'Outcome', 'Attempts', 'Answer']}>
        {(r) => (
          <tr key={r.email}>
            <td>{r.email}</td>
            <td>
              <Badge value={r.status} /> {r.bounce_type && <span class="muted">{r.bounce_type}</span>}
              {r.classification && <div class="muted">{r.classification.replaceAll('_', ' ')}</div>}
            </td>
            <td>{r.attempts}</td>
            <td class="wrap">
              {r.smtp_response ?? <span class="muted">—</span>}
              {r.next_attempt_at && (
                <div class="muted">
                  next attempt <Time value={r.next_attempt_at} />
                </div>
              )}
            </td>
          </tr>
        )}
      </Table>

      <h2>Timeline</h2>
      <Status loaded={events} what="the timeline" />
      {events.data && (
        <ol class="timeline" aria-label="Timeline">
          {events.data.data.map((ev, i) => (
            // The history only grows, in order: an event's place in it is its key.
            <li key={i} data-event={ev.type}>
              <span class="event-type">{ev.type}</span> <Time value={ev.created_at} />{' '}
              {ev.recipient && <span class="muted">{ev.recipient}</span>}
              {Object.keys(ev.data).length > 0 && (
                <details>
                  <summary>Data</summary>
                  <pre>{JSON.stringify(ev.data, null, 2)}</pre>
                </details>
              )}
            </li>
          ))}
        </ol>
      )}

      <h2>Content</h2>
      {e.html ? (
        <HtmlPreview html={e.html} title={`HTML part of ${e.subject}`} />
      ) : (
        <Empty>No HTML part.</Empty>
      )}
      <h3>Text part</h3>
      {e.text ? <pre class="text-part">{e.text}</pre> : <Empty>No text part.</Empty>}
      <h3>Headers</h3>
      {e.headers && Object.keys(e.headers).length > 0 ? (
        <dl class="facts">
          {Object.entries(e.headers).map(([k, v]) => (
            <Fragment key={k}>
              <dt>{k}</dt>
              <dd>{v}</dd>
            </Fragment>
          ))}
          <Fact label="Message-ID">{e.message_id || null}</Fact>
        </dl>
      ) : (
        <Empty>No custom headers{e.message_id ? ` (Message-ID ${e.message_id})` : ''}.</Empty>
      )}
      <h3>Attachments</h3>
      <PagedList loaded={attachments} what="attachments" empty="No attachments.">
        {(items) => (
          <ul class="wrap">
            {items.map((a) => (
              <li key={a.id}>
                <AttachmentLink attachment={a} path={`/emails/${e.id}/attachments/${a.id}`} />
              </li>
            ))}
          </ul>
        )}
      </PagedList>
    </section>
  );
}

/** An attachment's name, type and size, and its download from `path` (null: its content is gone). */
export function AttachmentLink(props: {
  attachment: Pick<Attachment, 'filename' | 'content_type' | 'size'>;
  path: string | null;
}) {
  const a = props.attachment;
  return (
    <span>
      {a.filename}{' '}
      <span class="muted">
        ({a.content_type}, {formatSize(a.size)})
      </span>{' '}
      {props.path && <DownloadLink path={props.path} />}
    </span>
  );
}

export function formatSize(n: number) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** The policy written into the preview while remote content is blocked: inline styles and embedded images only. */
const BLOCK_REMOTE = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:">`;

/**
 * An email's HTML in a frame that runs no script and has no origin (`sandbox` without any allowance), with
 * remote images (and other remote content) blocked until the user asks for them.
 */
export function HtmlPreview({ html, title }: { html: string; title: string }) {
  const [remote, setRemote] = useState(false);
  const hasRemote =
    /\b(src|background)\s*=\s*["']?\s*(https?:)?\/\//i.test(html) ||
    /url\(\s*["']?(https?:)?\/\//i.test(html);
  return (
    <div class="preview">
      <div class="preview-bar">
        {remote ? (
          <span class="muted">Remote images are shown.</span>
        ) : (
          <span class="muted">Remote images are blocked{hasRemote ? '' : ' (this email has none)'}.</span>
        )}
        {!remote && hasRemote && (
          <button type="button" class="small" onClick={() => setRemote(true)}>
            Load remote images
          </button>
        )}
      </div>
      <iframe
        title={title}
        sandbox=""
        referrerpolicy="no-referrer"
        srcdoc={remote ? html : BLOCK_REMOTE + html}
      />
    </div>
  );
}

function Schedule({ email, onChange }: { email: FullEmail; onChange: () => void }) {
  const action = useAction();
  const form = useFields({ send_at: email.send_at ? toLocalInput(email.send_at) : '' }, action.error);
  return (
    <ActionForm
      label="Scheduled send"
      action={action}
      fields={['send_at']}
      run={async () => {
        const when = form.values.send_at;
        await patch(`/emails/${email.id}`, { send_at: when ? new Date(when).toISOString() : '' });
        onChange();
      }}
    >
      <InputField label="Send at (your time zone)" type="datetime-local" {...form.field('send_at')} />
      <button type="submit" disabled={action.busy}>
        Reschedule
      </button>
      <ActionButton
        class="danger"
        action={action}
        run={() => post(`/emails/${email.id}/cancel`)}
        onDone={onChange}
      >
        Cancel email
      </ActionButton>
    </ActionForm>
  );
}

export function toLocalInput(iso: string) {
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
