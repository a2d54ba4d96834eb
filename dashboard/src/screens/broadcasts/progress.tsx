import type { Schema } from '../../api.ts';
import { Link } from '../../ui.tsx';

type BroadcastJson = Schema<'Broadcast'>;
type SkipReason = keyof Schema<'BroadcastProgress'>['skipped'];
type CountName = keyof Schema<'BroadcastCounts'>;

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
  ['canceled', 'canceled (stopped before they went out)'],
  ['opened', 'opened'],
  ['clicked', 'clicked'],
  ['unsubscribed', 'unsubscribed'],
];

/** How far sending a broadcast got: the contacts processed and skipped, and its emails' counts. */
export function BroadcastProgress({ b, onRefresh }: { b: BroadcastJson; onRefresh: () => void }) {
  return (
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
        <button type="button" class="small" onClick={onRefresh}>
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
    </>
  );
}
