import { del, post, type Schema } from '../api.ts';
import { ActionButton } from '../components/action-button.tsx';
import { ActionForm } from '../components/action-form.tsx';
import { InputField, useFields } from '../components/field.tsx';
import { PagedTable, usePagedList } from '../components/paged-list.tsx';
import { Badge, Link, Time, useAction } from '../ui.tsx';

type Suppression = Schema<'Suppression'>;

export function Suppressions() {
  const list = usePagedList<Suppression>('/suppressions', 50);
  const add = useAction();
  const remove = useAction();
  const form = useFields({ email: '' }, add.error);
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
          await post('/suppressions', form.values);
          form.set({ email: '' });
          list.reload();
        }}
      >
        <InputField label="Email address" type="email" required {...form.field('email')} />
      </ActionForm>
      <PagedTable
        loaded={list}
        what="suppressions"
        empty="No suppressed addresses."
        error={remove.error}
        columns={['Address', 'Reason', 'Since']}
        actions
      >
        {(s) => (
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
                run={() => del(`/suppressions/${s.id}`)}
                onDone={list.reload}
              >
                Remove
              </ActionButton>
            </td>
          </tr>
        )}
      </PagedTable>
    </section>
  );
}
