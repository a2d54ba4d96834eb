import { useState } from 'preact/hooks';
import { del, get, type List, patch, post, query } from '../api.ts';
import { navigate } from '../router.ts';
import {
  Badge,
  CopyButton,
  Empty,
  ErrorBox,
  Field,
  FormError,
  Link,
  Pager,
  Status,
  Time,
  useAction,
  useLoad,
} from '../ui.tsx';

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

/** A secret the API shows once: displayed until the user dismisses it, never stored. */
function SecretOnce({ secret, onDone }: { secret: string; onDone: () => void }) {
  return (
    <div class="notice secret" role="alert">
      <p>
        <strong>Signing secret — shown only now.</strong> Copy it into your receiver; it cannot be shown
        again.
      </p>
      <p>
        <code class="value">{secret}</code> <CopyButton value={secret} label="signing secret" />
      </p>
      <button type="button" class="small" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}

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
          onDone={() => {
            const id = secret.id;
            setSecret(null);
            navigate(`/webhooks/${id}`);
          }}
        />
      )}
      <form
        class="inline-form"
        aria-label="Add an endpoint"
        onSubmit={(e) => {
          e.preventDefault();
          create.run(async () => {
            const w = await post<WebhookJson & { signing_secret: string }>('/webhooks', {
              url,
              events: events.split(/[\s,]+/).filter(Boolean),
            });
            setSecret({ id: w.id, secret: w.signing_secret });
            setUrl('');
            list.reload();
          });
        }}
      >
        <Field label="Endpoint URL" name="url" error={create.error}>
          {(id, d, inv) => (
            <input
              id={id}
              type="url"
              required
              value={url}
              placeholder="https://example.com/hooks/postline"
              aria-describedby={d}
              aria-invalid={inv}
              onInput={(e) => setUrl(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field
          label="Events"
          name="events"
          error={create.error}
          hint="Comma-separated: email.delivered, email.*, *"
        >
          {(id, d, inv) => (
            <input
              id={id}
              value={events}
              aria-describedby={d}
              aria-invalid={inv}
              onInput={(e) => setEvents(e.currentTarget.value)}
            />
          )}
        </Field>
        <button type="submit" class="primary" disabled={create.busy}>
          Add endpoint
        </button>
        <FormError error={create.error} fields={['url', 'events']} />
      </form>
      <p class="muted">
        A new endpoint gets a test event (<code>webhook.test</code>) at once.
      </p>
      <Status loaded={list} what="webhooks" />
      {list.data && list.data.data.length === 0 && <Empty>No endpoints yet.</Empty>}
      {list.data && list.data.data.length > 0 && (
        <div class="table-wrap">
          <table class="list">
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((w) => (
                <tr key={w.id}>
                  <td class="wrap">
                    <Link href={`/webhooks/${w.id}`}>{w.url}</Link>
                  </td>
                  <td>{w.events.join(', ')}</td>
                  <td>
                    <Badge value={w.active ? 'active' : (w.disabled_reason ?? 'disabled')} />
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

export function Webhook({ id }: { id: string }) {
  const hook = useLoad(() => get<WebhookJson>(`/webhooks/${encodeURIComponent(id)}`), [id]);
  const [cursor, setCursor] = useState<{ starting_after?: string; ending_before?: string }>({});
  const deliveries = useLoad(
    () =>
      get<List<Delivery>>(`/webhooks/${encodeURIComponent(id)}/deliveries${query({ limit: 20, ...cursor })}`),
    [id, cursor.starting_after, cursor.ending_before],
  );
  const act = useAction();
  const [secret, setSecret] = useState<string | null>(null);
  const [since, setSince] = useState('');
  const [note, setNote] = useState<string | null>(null);
  const w = hook.data;
  if (!w)
    return (
      <section>
        <p>
          <Link href="/webhooks">← Webhooks</Link>
        </p>
        <Status loaded={hook} what="this webhook" />
      </section>
    );
  return (
    <section>
      <p>
        <Link href="/webhooks">← Webhooks</Link>
      </p>
      <h1 class="wrap">{w.url}</h1>
      <p>
        <Badge value={w.active ? 'active' : (w.disabled_reason ?? 'disabled')} /> {w.events.join(', ')}
        {w.consecutive_failures > 0 && (
          <span class="muted"> · {w.consecutive_failures} failures in a row</span>
        )}
      </p>
      {secret && <SecretOnce secret={secret} onDone={() => setSecret(null)} />}
      {note && (
        <p class="notice" role="status">
          {note}
        </p>
      )}
      <div class="row">
        <button
          type="button"
          disabled={act.busy}
          onClick={() =>
            act.run(async () =>
              setSecret(
                (await post<{ signing_secret: string }>(`/webhooks/${w.id}/rotate-secret`)).signing_secret,
              ),
            )
          }
        >
          Rotate secret
        </button>
        <button
          type="button"
          disabled={act.busy}
          onClick={() =>
            act.run(async () => {
              await patch(`/webhooks/${w.id}`, { active: !w.active });
              hook.reload();
            })
          }
        >
          {w.active ? 'Disable' : 'Enable'}
        </button>
        <button
          type="button"
          class="danger"
          disabled={act.busy}
          onClick={() =>
            confirm(`Delete the endpoint ${w.url}?`) &&
            act.run(async () => {
              await del(`/webhooks/${w.id}`);
              navigate('/webhooks');
            })
          }
        >
          Delete
        </button>
      </div>
      <form
        class="inline-form"
        aria-label="Replay events"
        onSubmit={(e) => {
          e.preventDefault();
          act.run(async () => {
            await post(`/webhooks/${w.id}/replay`, { since: since ? new Date(since).toISOString() : '' });
            setNote('Replay requested: the events since then are being delivered again.');
            deliveries.reload();
          });
        }}
      >
        <Field label="Replay events since" name="since" error={act.error}>
          {(fid, d, inv) => (
            <input
              id={fid}
              type="datetime-local"
              required
              value={since}
              aria-describedby={d}
              aria-invalid={inv}
              onInput={(e) => setSince(e.currentTarget.value)}
            />
          )}
        </Field>
        <button type="submit" disabled={act.busy}>
          Replay
        </button>
      </form>

      <h2>
        Deliveries{' '}
        <button type="button" class="small" onClick={deliveries.reload}>
          Refresh
        </button>
      </h2>
      <Status loaded={deliveries} what="deliveries" />
      {deliveries.data && deliveries.data.data.length === 0 && <Empty>No deliveries yet.</Empty>}
      {deliveries.data && deliveries.data.data.length > 0 && (
        <div class="table-wrap">
          <table class="list deliveries">
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Last answer</th>
                <th scope="col">Time</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {deliveries.data.data.map((d) => (
                <tr key={d.id} data-event={d.event_type}>
                  <td>
                    <details>
                      <summary>{d.event_type}</summary>
                      <pre>{JSON.stringify(d.payload, null, 2)}</pre>
                      {d.attempts.map((a, i) => (
                        <div key={i} class="muted">
                          attempt {i + 1}: <Time value={a.attempted_at} />{' '}
                          {a.response_status ?? a.error ?? ''}
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
                      <button
                        type="button"
                        class="small"
                        disabled={act.busy}
                        onClick={() =>
                          act.run(async () => {
                            await post(`/webhooks/${w.id}/deliveries/${d.id}/retry`);
                            setNote(`Delivery ${d.id} will be sent again.`);
                            deliveries.reload();
                          })
                        }
                      >
                        Retry
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager list={deliveries.data} cursor={cursor} onPage={setCursor} />
      {act.error && !(act.error instanceof Error && /`since`/.test(act.error.message)) ? (
        <ErrorBox error={act.error} />
      ) : null}
    </section>
  );
}
