import { listAll } from '../api.ts';
import { Empty, Status, Time, useLoad } from '../ui.tsx';

interface Contact {
  id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  unsubscribed: boolean;
  audience_ids: string[];
  created_at: string;
}
interface Audience {
  id: string;
  name: string;
  created_at: string;
}
interface Topic {
  id: string;
  name: string;
  description: string | null;
  default_subscription: string;
  created_at: string;
}

/** Contacts, audiences and topics, with counts computed from the lists (up to 1,000 contacts). */
export function Contacts() {
  const loaded = useLoad(async () => {
    const [contacts, audiences, topics] = await Promise.all([
      listAll<Contact>('/contacts'),
      listAll<Audience>('/audiences'),
      listAll<Topic>('/topics'),
    ]);
    return { contacts, audiences, topics };
  }, []);
  const d = loaded.data;
  const members = (audienceId: string) =>
    d?.contacts.data.filter((c) => c.audience_ids.includes(audienceId)).length ?? 0;
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
          {d.audiences.data.length === 0 ? (
            <Empty>No audiences.</Empty>
          ) : (
            <div class="table-wrap">
              <table class="list">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Contacts</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {d.audiences.data.map((a) => (
                    <tr key={a.id}>
                      <td>{a.name}</td>
                      <td>
                        {members(a.id)}
                        {more}
                      </td>
                      <td>
                        <Time value={a.created_at} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h2>Topics</h2>
          {d.topics.data.length === 0 ? (
            <Empty>No topics.</Empty>
          ) : (
            <div class="table-wrap">
              <table class="list">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Default</th>
                    <th scope="col">Description</th>
                  </tr>
                </thead>
                <tbody>
                  {d.topics.data.map((t) => (
                    <tr key={t.id}>
                      <td>{t.name}</td>
                      <td>{t.default_subscription}</td>
                      <td>{t.description ?? <span class="muted">—</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h2>Contacts</h2>
          {d.contacts.data.length === 0 ? (
            <Empty>No contacts.</Empty>
          ) : (
            <div class="table-wrap">
              <table class="list">
                <thead>
                  <tr>
                    <th scope="col">Email</th>
                    <th scope="col">Name</th>
                    <th scope="col">Subscribed</th>
                    <th scope="col">Added</th>
                  </tr>
                </thead>
                <tbody>
                  {d.contacts.data.slice(0, 100).map((c) => (
                    <tr key={c.id}>
                      <td>{c.email ?? <span class="muted">(erased)</span>}</td>
                      <td>
                        {[c.first_name, c.last_name].filter(Boolean).join(' ') || (
                          <span class="muted">—</span>
                        )}
                      </td>
                      <td>{c.unsubscribed ? 'unsubscribed' : 'yes'}</td>
                      <td>
                        <Time value={c.created_at} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}
