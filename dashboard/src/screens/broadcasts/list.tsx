import type { Schema } from '../../api.ts';
import { PagedTable, usePagedList } from '../../components/paged-list.tsx';
import { Badge, Link, Time } from '../../ui.tsx';
import { nameOf, usePickers } from './pickers.ts';

type BroadcastSummary = Schema<'BroadcastSummary'>;

/** The way back to this list, for the pages of one broadcast. */
export const BACK: [string, string] = ['/broadcasts', 'Broadcasts'];

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
