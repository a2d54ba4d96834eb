import { useState } from 'preact/hooks';
import { del, get, type List, post, query } from '../api.ts';
import {
  Badge,
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

interface Suppression {
  id: string;
  email: string;
  reason: string;
  source_email_id: string | null;
  created_at: string;
}

export function Suppressions() {
  const [cursor, setCursor] = useState<{ starting_after?: string; ending_before?: string }>({});
  const list = useLoad(
    () => get<List<Suppression>>(`/suppressions${query({ limit: 50, ...cursor })}`),
    [cursor.starting_after, cursor.ending_before],
  );
  const add = useAction();
  const remove = useAction();
  const [email, setEmail] = useState('');
  return (
    <section>
      <h1>Suppressions</h1>
      <p class="muted">Addresses Postline will not send to: hard bounces, complaints, and those you add.</p>
      <form
        class="inline-form"
        aria-label="Suppress an address"
        onSubmit={(e) => {
          e.preventDefault();
          add.run(async () => {
            await post('/suppressions', { email });
            setEmail('');
            list.reload();
          });
        }}
      >
        <Field label="Email address" name="email" error={add.error}>
          {(id, d, inv) => (
            <input
              id={id}
              type="email"
              required
              value={email}
              aria-describedby={d}
              aria-invalid={inv}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
          )}
        </Field>
        <button type="submit" disabled={add.busy}>
          Suppress
        </button>
        <FormError error={add.error} fields={['email']} />
      </form>
      <Status loaded={list} what="suppressions" />
      {remove.error ? <ErrorBox error={remove.error} /> : null}
      {list.data && list.data.data.length === 0 && <Empty>No suppressed addresses.</Empty>}
      {list.data && list.data.data.length > 0 && (
        <div class="table-wrap">
          <table class="list">
            <thead>
              <tr>
                <th scope="col">Address</th>
                <th scope="col">Reason</th>
                <th scope="col">Since</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((s) => (
                <tr key={s.id}>
                  <td>{s.email}</td>
                  <td>
                    <Badge value={s.reason} />{' '}
                    {s.source_email_id && <Link href={`/emails/${s.source_email_id}`}>email</Link>}
                  </td>
                  <td>
                    <Time value={s.created_at} />
                  </td>
                  <td>
                    <button
                      type="button"
                      class="small"
                      disabled={remove.busy}
                      onClick={() =>
                        remove.run(async () => {
                          await del(`/suppressions/${s.id}`);
                          list.reload();
                        })
                      }
                    >
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager list={list.data} cursor={cursor} onPage={setCursor} />
    </section>
  );
}
