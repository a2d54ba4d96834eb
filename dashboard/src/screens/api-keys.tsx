import { useState } from 'preact/hooks';
import { del, get, type List, post, type Schema } from '../api.ts';
import { ActionButton } from '../components/action-button.tsx';
import { ActionForm } from '../components/action-form.tsx';
import { InputField, SelectField, useFields } from '../components/field.tsx';
import { PagedTable } from '../components/paged-list.tsx';
import { SecretOnce } from '../components/secret-once.tsx';
import { Badge, Time, useAction, useLoad } from '../ui.tsx';

type ApiKeyJson = Schema<'ApiKey'>;

const PERMISSIONS = [
  { value: 'full_access', label: 'full_access' },
  { value: 'sending_access', label: 'sending_access (send only)' },
];

export function ApiKeys() {
  const list = useLoad(() => get<List<ApiKeyJson>>('/api-keys?limit=100'), []);
  const create = useAction();
  const remove = useAction();
  const form = useFields({ name: '', permission: 'full_access' }, create.error);
  const [created, setCreated] = useState<string | null>(null);
  return (
    <section>
      <h1>API keys</h1>
      {created && (
        <SecretOnce secret={created} label="API key" onDone={() => setCreated(null)}>
          <strong>New key — shown only now.</strong> Store it somewhere safe; only its hash is kept.
        </SecretOnce>
      )}
      <ActionForm
        label="Create an API key"
        action={create}
        submit="Create key"
        submitClass="primary"
        fields={['name', 'permission']}
        run={async () => {
          const k = await post<{ key: string }>('/api-keys', form.values);
          setCreated(k.key);
          form.set({ name: '' });
          list.reload();
        }}
      >
        <InputField label="Key name" required {...form.field('name')} />
        <SelectField label="Permission" options={PERMISSIONS} {...form.field('permission')} />
      </ActionForm>
      <p class="muted">A new key has the mode of the key you are signed in with.</p>
      <PagedTable
        loaded={list}
        what="API keys"
        empty="No keys."
        error={remove.error}
        columns={['Name', 'Key', 'Permission', 'Created']}
        actions
      >
        {(k) => (
          <tr key={k.id}>
            <td>{k.name}</td>
            <td>
              <code>{k.key_prefix}…</code> <Badge value={k.mode} />
            </td>
            <td>{k.permission}</td>
            <td>
              <Time value={k.created_at} />
            </td>
            <td>
              <ActionButton
                class="small danger"
                action={remove}
                confirm={`Delete the key ${k.name}? Requests with it are refused at once.`}
                run={() => del(`/api-keys/${k.id}`)}
                onDone={list.reload}
              >
                Delete
              </ActionButton>
            </td>
          </tr>
        )}
      </PagedTable>
    </section>
  );
}
