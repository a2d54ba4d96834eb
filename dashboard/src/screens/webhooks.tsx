import { useState } from 'preact/hooks';
import { del, get, type List, patch, post } from '../api.ts';
import { ActionButton } from '../components/action-button.tsx';
import { ActionForm } from '../components/action-form.tsx';
import { BackLink, NotLoaded } from '../components/detail.tsx';
import { InputField } from '../components/field.tsx';
import { PagedList, Table, usePagedList } from '../components/paged-list.tsx';
import { SecretOnce } from '../components/secret-once.tsx';
import { navigate } from '../router.ts';
import { Badge, ErrorBox, Link, Time, useAction, useLoad } from '../ui.tsx';

interface WebhookJson {
  id: string;
  url: string;
  events: string[];
  active: boolean;
  disabled_reason: string | null;
  consecutive_failures: number;
  last_success_at: string | null;
  last_failure_at: string | null;
  created_at: string;
}
interface Attempt {
  attempted_at: string | null;
  response_status: number | null;
  latency_ms?: number | null;
  error?: string | null;
}
interface Delivery {
  id: string;
  event_type: string;
  status: string;
  next_attempt_at: string | null;
  last_response_status: number | null;
  last_error: string | null;
  payload: unknown;
  attempts: Attempt[];
  created_at: string;
}

const BACK: [string, string] = ['/webhooks', 'Webhooks'];
const SIGNING_SECRET = (
  <>
    <strong>Signing secret — shown only now.</strong> Copy it into your receiver; it cannot be shown again.
  </>
);
const state = (w: WebhookJson) => (w.active ? 'active' : (w.disabled_reason ?? 'disabled'));

export function Webhooks() {
  const list = useLoad(() => get<List<WebhookJson>>('/webhooks?limit=100'), []);
  const create = useAction();
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState('email.*');
  const [secret, setSecret] = useState<{ id: string; secret: string } | null>(null);
  return (
    <section>
      <h1>Webhooks</h1>
      {secret && (
        <SecretOnce
          secret={secret.secret}
          label="signing secret"
          onDone={() => {
            const id = secret.id;
            setSecret(null);
            navigate(`/webhooks/${id}`);
          }}
        >
          {SIGNING_SECRET}
        </SecretOnce>
      )}
      <ActionForm
        label="Add an endpoint"
        action={create}
        submit="Add endpoint"
        submitClass="primary"
        fields={['url', 'events']}
        run={async () => {
          const w = await post<WebhookJson & { signing_secret: string }>('/webhooks', {
            url,
            events: events.split(/[\s,]+/).filter(Boolean),
          });
          setSecret({ id: w.id, secret: w.signing_secret });
          setUrl('');
          list.reload();
        }}
      >
        <InputField
          label="Endpoint URL"
          name="url"
          error={create.error}
          type="url"
          required
          placeholder="https://example.com/hooks/postline"
          value={url}
          onValue={setUrl}
        />
        <InputField
          label="Events"
          name="events"
          error={create.error}
          hint="Comma-separated: email.delivered, email.*, *"
          value={events}
          onValue={setEvents}
        />
      </ActionForm>
      <p class="muted">
        A new endpoint gets a test event (<code>webhook.test</code>) at once.
      </p>
      <PagedList loaded={list} what="webhooks" empty="No endpoints yet.">
        {(hooks) => (
          <Table columns={['URL', 'Events', 'State']}>
            {hooks.map((w) => (
              <tr key={w.id}>
                <td class="wrap">
                  <Link href={`/webhooks/${w.id}`}>{w.url}</Link>
                </td>
                <td>{w.events.join(', ')}</td>
                <td>
                  <Badge value={state(w)} />
                </td>
              </tr>
            ))}
          </Table>
        )}
      </PagedList>
    </section>
  );
}

export function Webhook({ id }: { id: string }) {
  const hook = useLoad(() => get<WebhookJson>(`/webhooks/${encodeURIComponent(id)}`), [id]);
  const deliveries = usePagedList<Delivery>(`/webhooks/${encodeURIComponent(id)}/deliveries`, 20);
  const act = useAction();
  const [secret, setSecret] = useState<string | null>(null);
  const [since, setSince] = useState('');
  const [note, setNote] = useState<string | null>(null);
  const w = hook.data;
  if (!w) return <NotLoaded back={BACK} loaded={hook} what="this webhook" />;
  return (
    <section>
      <BackLink back={BACK} />
      <h1 class="wrap">{w.url}</h1>
      <p>
        <Badge value={state(w)} /> {w.events.join(', ')}
        {w.consecutive_failures > 0 && (
          <span class="muted"> · {w.consecutive_failures} failures in a row</span>
        )}
      </p>
      {secret && (
        <SecretOnce secret={secret} label="signing secret" onDone={() => setSecret(null)}>
          {SIGNING_SECRET}
        </SecretOnce>
      )}
      {note && (
        <p class="notice" role="status">
          {note}
        </p>
      )}
      <div class="row">
        <ActionButton
          action={act}
          run={async () =>
            setSecret(
              (await post<{ signing_secret: string }>(`/webhooks/${w.id}/rotate-secret`)).signing_secret,
            )
          }
        >
          Rotate secret
        </ActionButton>
        <ActionButton
          action={act}
          run={async () => {
            await patch(`/webhooks/${w.id}`, { active: !w.active });
            hook.reload();
          }}
        >
          {w.active ? 'Disable' : 'Enable'}
        </ActionButton>
        <ActionButton
          class="danger"
          action={act}
          confirm={`Delete the endpoint ${w.url}?`}
          run={async () => {
            await del(`/webhooks/${w.id}`);
            navigate('/webhooks');
          }}
        >
          Delete
        </ActionButton>
      </div>
      <ActionForm
        label="Replay events"
        action={act}
        submit="Replay"
        run={async () => {
          await post(`/webhooks/${w.id}/replay`, { since: since ? new Date(since).toISOString() : '' });
          setNote('Replay requested: the events since then are being delivered again.');
          deliveries.reload();
        }}
      >
        <InputField
          label="Replay events since"
          name="since"
          error={act.error}
          type="datetime-local"
          required
          value={since}
          onValue={setSince}
        />
      </ActionForm>

      <h2>
        Deliveries{' '}
        <button type="button" class="small" onClick={deliveries.reload}>
          Refresh
        </button>
      </h2>
      <PagedList loaded={deliveries} what="deliveries" empty="No deliveries yet." pages={deliveries.pages}>
        {(items) => (
          <Table class="deliveries" columns={['Event', 'Status', 'Last answer', 'Time']} actions>
            {items.map((d) => (
              <tr key={d.id} data-event={d.event_type}>
                <td>
                  <details>
                    <summary>{d.event_type}</summary>
                    <pre>{JSON.stringify(d.payload, null, 2)}</pre>
                    {d.attempts.map((a, i) => (
                      <div key={i} class="muted">
                        attempt {i + 1}: <Time value={a.attempted_at} /> {a.response_status ?? a.error ?? ''}
                      </div>
                    ))}
                  </details>
                </td>
                <td>
                  <Badge value={d.status} />
                </td>
                <td>{d.last_response_status ?? d.last_error ?? <span class="muted">—</span>}</td>
                <td>
                  <Time value={d.created_at} />
                </td>
                <td>
                  {d.status !== 'pending' && (
                    <ActionButton
                      class="small"
                      action={act}
                      run={async () => {
                        await post(`/webhooks/${w.id}/deliveries/${d.id}/retry`);
                        setNote(`Delivery ${d.id} will be sent again.`);
                        deliveries.reload();
                      }}
                    >
                      Retry
                    </ActionButton>
                  )}
                </td>
              </tr>
            ))}
          </Table>
        )}
      </PagedList>
      {act.error && !(act.error instanceof Error && /`since`/.test(act.error.message)) ? (
        <ErrorBox error={act.error} />
      ) : null}
    </section>
  );
}
