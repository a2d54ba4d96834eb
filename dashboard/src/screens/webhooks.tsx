import { useState } from 'preact/hooks';
import { del, get, type List, patch, post, type Schema } from '../api.ts';
import { ActionButton } from '../components/action-button.tsx';
import { ActionForm } from '../components/action-form.tsx';
import { BackLink, NotLoaded } from '../components/detail.tsx';
import { InputField, useFields } from '../components/field.tsx';
import { PagedTable, usePagedList } from '../components/paged-list.tsx';
import { SecretOnce } from '../components/secret-once.tsx';
import { navigate } from '../router.ts';
import { Badge, FormError, Link, Time, useAction, useLoad } from '../ui.tsx';

type WebhookJson = Schema<'Webhook'>;
type Delivery = Schema<'WebhookDelivery'>;

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
  const form = useFields({ url: '', events: 'email.*' }, create.error);
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
            url: form.values.url,
            events: form.values.events.split(/[\s,]+/).filter(Boolean),
          });
          setSecret({ id: w.id, secret: w.signing_secret });
          form.set({ url: '' });
          list.reload();
        }}
      >
        <InputField
          label="Endpoint URL"
          type="url"
          required
          placeholder="https://example.com/hooks/postline"
          {...form.field('url')}
        />
        <InputField
          label="Events"
          hint="Comma-separated: email.delivered, email.*, *"
          {...form.field('events')}
        />
      </ActionForm>
      <p class="muted">
        A new endpoint gets a test event (<code>webhook.test</code>) at once.
      </p>
      <PagedTable
        loaded={list}
        what="webhooks"
        empty="No endpoints yet."
        columns={['URL', 'Events', 'State']}
      >
        {(w) => (
          <tr key={w.id}>
            <td class="wrap">
              <Link href={`/webhooks/${w.id}`}>{w.url}</Link>
            </td>
            <td>{w.events.join(', ')}</td>
            <td>
              <Badge value={state(w)} />
            </td>
          </tr>
        )}
      </PagedTable>
    </section>
  );
}

export function Webhook({ id }: { id: string }) {
  const hook = useLoad(() => get<WebhookJson>(`/webhooks/${encodeURIComponent(id)}`), [id]);
  const deliveries = usePagedList<Delivery>(`/webhooks/${encodeURIComponent(id)}/deliveries`, 20);
  const act = useAction();
  const [secret, setSecret] = useState<string | null>(null);
  const replay = useFields({ since: '' }, act.error);
  const [note, setNote] = useState<string | null>(null);
  const w = hook.data;
  if (!w) return <NotLoaded back={BACK} loaded={hook} what="this webhook" />;
  /** `expiresIn`: seconds the replaced secret still signs (0: a secret that leaked); by default 24 hours. */
  const rotate = async (expiresIn?: number) => {
    const body = expiresIn === undefined ? {} : { previous_secret_expires_in: expiresIn };
    setSecret(
      (await post<{ signing_secret: string }>(`/webhooks/${w.id}/rotate-secret`, body)).signing_secret,
    );
  };
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
        <ActionButton action={act} run={() => rotate()}>
          Rotate secret
        </ActionButton>
        <ActionButton
          action={act}
          confirm="Rotate the secret and stop the current one now? Deliveries are then signed with the new secret only."
          run={() => rotate(0)}
        >
          Rotate, old secret stops now
        </ActionButton>
        <ActionButton
          action={act}
          run={() => patch(`/webhooks/${w.id}`, { active: !w.active })}
          onDone={hook.reload}
        >
          {w.active ? 'Disable' : 'Enable'}
        </ActionButton>
        <ActionButton
          class="danger"
          action={act}
          confirm={`Delete the endpoint ${w.url}?`}
          run={() => del(`/webhooks/${w.id}`)}
          onDone={() => navigate('/webhooks')}
        >
          Delete
        </ActionButton>
      </div>
      <ActionForm
        label="Replay events"
        action={act}
        submit="Replay"
        run={async () => {
          const { since } = replay.values;
          await post(`/webhooks/${w.id}/replay`, { since: since ? new Date(since).toISOString() : '' });
          setNote('Replay requested: the events since then are being delivered again.');
          deliveries.reload();
        }}
      >
        <InputField label="Replay events since" type="datetime-local" required {...replay.field('since')} />
      </ActionForm>

      <h2>
        Deliveries{' '}
        <button type="button" class="small" onClick={deliveries.reload}>
          Refresh
        </button>
      </h2>
      <PagedTable
        loaded={deliveries}
        what="deliveries"
        empty="No deliveries yet."
        class="deliveries"
        columns={['Event', 'Status', 'Last answer', 'Time']}
        actions
      >
        {(d) => (
          <tr key={d.id} data-event={d.event_type}>
            <td>
              <details>
                <summary>{d.event_type}</summary>
                <pre>{JSON.stringify(d.payload, null, 2)}</pre>
                {d.attempts.map((a, i) => (
                  <div key={i}>
                    <span class="muted">
                      attempt {i + 1}: <Time value={a.attempted_at} /> {a.response_status ?? a.error ?? ''} in{' '}
                      {a.latency_ms} ms
                    </span>
                    {a.response_excerpt && <pre data-answer-to={i + 1}>{a.response_excerpt}</pre>}
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
        )}
      </PagedTable>
      <FormError error={act.error} fields={['since']} />
    </section>
  );
}
