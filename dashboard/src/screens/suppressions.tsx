import { useState } from 'preact/hooks';
import { del, post } from '../api.ts';
import { ActionButton } from '../components/action-button.tsx';
import { ActionForm } from '../components/action-form.tsx';
import { InputField } from '../components/field.tsx';
import { PagedList, Table, usePagedList } from '../components/paged-list.tsx';
import { Badge, Link, Time, useAction } from '../ui.tsx';

interface Suppression {
  id: string;
  email: string;
  reason: string;
  source_email_id: string | null;
  created_at: string;
}

export function Suppressions() {
  const list = usePagedList<Suppression>('/suppressions', 50);
  const add = useAction();
  const remove = useAction();
  const [email, setEmail] = useState('');
  return (
    <section>
      <h1>Suppressions</h1>
      <p class="muted">Addresses Postline will not send to: hard bounces, complaints, and those you add.</p>
      <ActionForm
        label="Suppress an address"
        action={add}
        submit="Suppress"
        fields={['email']}
        run={async () => {
          await post('/suppressions', { email });
          setEmail('');
          list.reload();
        }}
      >
        <InputField
          label="Email address"
          name="email"
          error={add.error}
          type="email"
          required
          value={email}
          onValue={setEmail}
        />
      </ActionForm>
      <PagedList
        loaded={list}
        what="suppressions"
        empty="No suppressed addresses."
        error={remove.error}
        pages={list.pages}
      >
        {(suppressions) => (
          <Table columns={['Address', 'Reason', 'Since']} actions>
            {suppressions.map((s) => (
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
                  <ActionButton
                    class="small"
                    action={remove}
                    run={async () => {
                      await del(`/suppressions/${s.id}`);
                      list.reload();
                    }}
                  >
                    Remove
                  </ActionButton>
                </td>
              </tr>
            ))}
          </Table>
        )}
      </PagedList>
    </section>
  );
}
