import { get, type Schema } from '../api.ts';
import { BackLink } from '../components/detail.tsx';
import { Table } from '../components/paged-list.tsx';
import { Badge, Empty, Link, Status, Time, useLoad } from '../ui.tsx';

type QueueDestination = Schema<'QueueDestination'>;
type QueueReply = Schema<'QueueReply'>;

/** The rows of GET /v1/queue: what waits for delivery per destination and lane. */
function QueueTable({ rows, link }: { rows: QueueDestination[]; link: boolean }) {
  return (
    <Table
      columns={[
        'Destination',
        'Lane',
        'Queued',
        'Deferred',
        'Held',
        'In flight',
        'Oldest',
        'Paused until',
        'Last reply',
      ]}
      items={rows}
      class="queue"
    >
      {(r) => (
        <tr key={`${r.destination} ${r.lane}`} data-destination={r.destination}>
          <td>
            {link ? (
              <Link href={`/queue/${encodeURIComponent(r.destination)}`}>{r.destination}</Link>
            ) : (
              r.destination
            )}
          </td>
          <td>{r.lane}</td>
          <td>{r.queued}</td>
          <td>{r.deferred}</td>
          <td>{r.held}</td>
          <td>{r.in_flight}</td>
          <td>
            <Time value={r.oldest_queued_at} />
          </td>
          <td data-paused={r.paused_until ? 'yes' : 'no'}>
            <Time value={r.paused_until} />
          </td>
          <td>
            <Badge value={r.last_classification} /> <span class="muted">{r.last_response}</span>
          </td>
        </tr>
      )}
    </Table>
  );
}

export function Queue() {
  const queue = useLoad(() => get<{ data: QueueDestination[] }>('/queue'), []);
  return (
    <section>
      <h1>Queue</h1>
      <p class="muted">
        Mail waiting for delivery, per recipient domain and lane: <em>queued</em> is due now,{' '}
        <em>deferred</em> waits for a retry or for the destination's traffic to slow down, <em>held</em> waits
        for a pause to end (the time shown), <em>in flight</em> is being delivered.
      </p>
      <Status loaded={queue} what="the queue" />
      {queue.data &&
        (queue.data.data.length === 0 ? (
          <Empty>No mail waiting: everything accepted has been delivered or has bounced.</Empty>
        ) : (
          <QueueTable rows={queue.data.data} link />
        ))}
    </section>
  );
}

export function QueueDestinationScreen({ destination }: { destination: string }) {
  const q = encodeURIComponent(destination);
  const rows = useLoad(() => get<{ data: QueueDestination[] }>(`/queue?destination=${q}`), [q]);
  const replies = useLoad(() => get<{ data: QueueReply[] }>(`/queue/${q}/replies`), [q]);
  return (
    <section>
      <BackLink back={['/queue', 'Queue']} />
      <h1>{destination}</h1>
      <Status loaded={rows} what="this destination's queue" />
      {rows.data &&
        (rows.data.data.length === 0 ? (
          <Empty>No mail waiting for {destination}.</Empty>
        ) : (
          <QueueTable rows={rows.data.data} link={false} />
        ))}
      <h2>Recent replies</h2>
      <Status loaded={replies} what="its replies" />
      {replies.data && (
        <Table
          columns={['At', 'Code', 'Class', 'Reply']}
          items={replies.data.data}
          empty="No replies from this destination in the last day."
          class="replies"
        >
          {(r) => (
            <tr key={`${r.at} ${r.response}`}>
              <td>
                <Time value={r.at} />
              </td>
              <td>{r.smtp_code ?? '—'}</td>
              <td>
                <Badge value={r.classification} />
              </td>
              <td>{r.response}</td>
            </tr>
          )}
        </Table>
      )}
    </section>
  );
}
