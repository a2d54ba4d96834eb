import { get, type Schema } from '../api.ts';
import { Detail } from '../components/detail.tsx';
import { DownloadLink } from '../components/download-link.tsx';
import { Fact } from '../components/facts.tsx';
import { PagedTable, usePagedList } from '../components/paged-list.tsx';
import { Badge, Empty, Link, Time, useLoad } from '../ui.tsx';
import { AttachmentLink, formatSize, HtmlPreview } from './email.tsx';

type Mailbox = NonNullable<ReceivedJson['from']>;
type ReceivedJson = Schema<'ReceivedEmail'>;

const who = (m: Mailbox | null) => (m ? (m.name ? `${m.name} <${m.email}>` : m.email) : '—');

export function Received() {
  const list = usePagedList<ReceivedJson>('/emails/received', 20);
  return (
    <section>
      <h1>Received emails</h1>
      <PagedTable
        loaded={list}
        what="received emails"
        empty="Nothing received yet. Enable inbound on a domain and publish its MX record."
        columns={['From', 'Subject', 'Received']}
      >
        {(r) => (
          <tr key={r.id}>
            <td class="truncate">{who(r.from)}</td>
            <td>
              <Link href={`/received/${r.id}`}>{r.subject || '(no subject)'}</Link>{' '}
              {r.is_spam && <Badge value="spam" />}
            </td>
            <td>
              <Time value={r.created_at} />
            </td>
          </tr>
        )}
      </PagedTable>
    </section>
  );
}

export function ReceivedEmail({ id }: { id: string }) {
  const loaded = useLoad(() => get<ReceivedJson>(`/emails/received/${encodeURIComponent(id)}`), [id]);
  return (
    <Detail back={['/received', 'Received']} loaded={loaded} what="this email" data={loaded.data}>
      {(r) => (
        <>
          <h1>{r.subject || '(no subject)'}</h1>
          <dl class="facts">
            <Fact label="From">{who(r.from)}</Fact>
            <Fact label="To">{r.to.map(who).join(', ')}</Fact>
            <Fact label="Received">
              <Time value={r.created_at} /> ({formatSize(r.size)})
            </Fact>
            <Fact label="Spam">
              {r.is_spam ? 'yes' : 'no'}
              {r.spam_score !== null && ` (score ${r.spam_score})`}
            </Fact>
          </dl>
          {r.purged_at ? (
            <p class="notice">The content was deleted after the retention period.</p>
          ) : (
            <p>
              <DownloadLink
                path={`/emails/received/${r.id}/raw`}
                ask="Get the raw message"
                download={`Download ${r.id}.eml`}
              />
            </p>
          )}
          {r.html_body && (
            <HtmlPreview html={r.html_body} title={`HTML of ${r.subject ?? 'received email'}`} />
          )}
          <h2>Text</h2>
          {r.text_body ? <pre class="text-part">{r.text_body}</pre> : <Empty>No text part.</Empty>}
          <h2>Attachments</h2>
          {r.attachments.length === 0 ? (
            <Empty>No attachments.</Empty>
          ) : (
            <ul class="wrap">
              {r.attachments.map((a) => (
                <li key={a.id}>
                  <AttachmentLink
                    attachment={a}
                    path={r.purged_at ? null : `/emails/received/${r.id}/attachments/${a.id}`}
                  />
                </li>
              ))}
            </ul>
          )}
          <h2>Authentication</h2>
          <pre>{JSON.stringify(r.authentication, null, 2)}</pre>
        </>
      )}
    </Detail>
  );
}
