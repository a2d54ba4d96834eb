import { get, listAll, type Schema } from '../api.ts';
import { Table } from '../components/paged-list.tsx';
import { Status, Time, useLoad } from '../ui.tsx';

type Contact = Schema<'Contact'>;
/** An audience as listed, with its contact count where it was read alone (`GET /v1/audiences/{id}`). */
type Audience = Schema<'Audience'> & Partial<Pick<Schema<'AudienceWithCount'>, 'contacts'>>;
type Topic = Schema<'Topic'>;

/** Audiences whose members are counted by the API, one request each; any beyond show no count. */
const COUNTED_AUDIENCES = 50;

/**
 * Contacts, audiences and topics. An audience's member count is the API's (`GET /v1/audiences/{id}`); the
 * contact totals are counted from the list (up to 1,000 contacts).
 */
export function Contacts() {
  const loaded = useLoad(async () => {
    const [contacts, listed, topics] = await Promise.all([
      listAll<Contact>('/contacts'),
      listAll<Audience>('/audiences'),
      listAll<Topic>('/topics'),
    ]);
    const counted = await Promise.all(
      listed.data
        .slice(0, COUNTED_AUDIENCES)
        .map((a) => get<Schema<'AudienceWithCount'>>(`/audiences/${a.id}`)),
    );
    const audiences = { ...listed, data: listed.data.map((a, i) => counted[i] ?? a) };
    return { contacts, audiences, topics };
  }, []);
  const d = loaded.data;
  const more = d && !d.contacts.complete ? '+' : '';
  return (
    <section>
      <h1>Contacts</h1>
      <Status loaded={loaded} what="contacts, audiences and topics" />
      {d && (
        <>
          <ul class="stats" aria-label="Counts">
            <li>
              <strong>
                {d.contacts.data.length}
                {more}
              </strong>{' '}
              contacts
            </li>
            <li>
              <strong>
                {d.contacts.data.filter((c) => c.unsubscribed).length}
                {more}
              </strong>{' '}
              unsubscribed
            </li>
            <li>
              <strong>{d.audiences.data.length}</strong> audiences
            </li>
            <li>
              <strong>{d.topics.data.length}</strong> topics
            </li>
          </ul>
          <h2>Audiences</h2>
          <Table items={d.audiences.data} empty="No audiences." columns={['Name', 'Contacts', 'Created']}>
            {(a) => (
              <tr key={a.id}>
                <td>{a.name}</td>
                <td>{a.contacts ?? <span class="muted">—</span>}</td>
                <td>
                  <Time value={a.created_at} />
                </td>
              </tr>
            )}
          </Table>
          <h2>Topics</h2>
          <Table items={d.topics.data} empty="No topics." columns={['Name', 'Default', 'Description']}>
            {(t) => (
              <tr key={t.id}>
                <td>{t.name}</td>
                <td>{t.default_subscription}</td>
                <td>{t.description ?? <span class="muted">—</span>}</td>
              </tr>
            )}
          </Table>
          <h2>Contacts</h2>
          <Table
            items={d.contacts.data.slice(0, 100)}
            empty="No contacts."
            columns={['Email', 'Name', 'Subscribed', 'Added']}
          >
            {(c) => (
              <tr key={c.id}>
                <td>{c.email ?? <span class="muted">(erased)</span>}</td>
                <td>
                  {[c.first_name, c.last_name].filter(Boolean).join(' ') || <span class="muted">—</span>}
                </td>
                <td>{c.unsubscribed ? 'unsubscribed' : 'yes'}</td>
                <td>
                  <Time value={c.created_at} />
                </td>
              </tr>
            )}
          </Table>
        </>
      )}
    </section>
  );
}
