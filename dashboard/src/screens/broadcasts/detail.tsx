import { useEffect, useState } from 'preact/hooks';
import { get, patch, post, type Schema } from '../../api.ts';
import { ActionButton } from '../../components/action-button.tsx';
import { BackLink, NotLoaded } from '../../components/detail.tsx';
import { Fact } from '../../components/facts.tsx';
import { Badge, ErrorBox, Time, useAction, useLoad } from '../../ui.tsx';
import { BroadcastContent } from './content.tsx';
import { BroadcastForm } from './form.tsx';
import { type FormState, formOf } from './form-state.ts';
import { BACK } from './list.tsx';
import { nameOf, usePickers } from './pickers.ts';
import { BroadcastProgress } from './progress.tsx';
import { SendPanel } from './send-panel.tsx';

type BroadcastJson = Schema<'Broadcast'>;

const FOLLOW = new Set(['sending']);
const STOP = 'Stop this broadcast? No more contacts get its email, and its emails not yet sent are canceled.';

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
      {/* One cancel for both: a scheduled broadcast becomes a draft again, a sending one stops for good. */}
      {(b.status === 'scheduled' || b.status === 'sending') && (
        <div class="row">
          {b.status === 'scheduled' && (
            <p>
              Goes out <Time value={b.send_at} /> (your time zone).
            </p>
          )}
          <ActionButton
            class="danger"
            action={act}
            confirm={b.status === 'sending' ? STOP : undefined}
            run={() => post(`/broadcasts/${b.id}/cancel`)}
            onDone={loaded.reload}
          >
            {b.status === 'scheduled' ? 'Cancel schedule' : 'Stop sending'}
          </ActionButton>
          <ErrorBox error={act.error} />
        </div>
      )}

      {b.status !== 'draft' && (
        <>
          <BroadcastProgress b={b} onRefresh={loaded.reload} />
          <BroadcastContent b={b} template={template} />
        </>
      )}
    </section>
  );
}
