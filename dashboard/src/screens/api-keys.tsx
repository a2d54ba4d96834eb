import { useState } from 'preact/hooks';
import { del, get, type List, post } from '../api.ts';
import {
  Badge,
  CopyButton,
  Empty,
  ErrorBox,
  Field,
  FormError,
  Status,
  Time,
  useAction,
  useLoad,
} from '../ui.tsx';

interface ApiKeyJson {
  id: string;
  name: string;
  key_prefix: string;
  permission: string;
  domain_id: string | null;
  mode: string;
  created_at: string;
}

export function ApiKeys() {
  const list = useLoad(() => get<List<ApiKeyJson>>('/api-keys?limit=100'), []);
  const create = useAction();
  const remove = useAction();
  const [name, setName] = useState('');
  const [permission, setPermission] = useState('full_access');
  const [created, setCreated] = useState<string | null>(null);
  return (
    <section>
      <h1>API keys</h1>
      {created && (
        <div class="notice secret" role="alert">
          <p>
            <strong>New key — shown only now.</strong> Store it somewhere safe; only its hash is kept.
          </p>
          <p>
            <code class="value">{created}</code> <CopyButton value={created} label="API key" />
          </p>
          <button type="button" class="small" onClick={() => setCreated(null)}>
            I have copied it
          </button>
        </div>
      )}
      <form
        class="inline-form"
        aria-label="Create an API key"
        onSubmit={(e) => {
          e.preventDefault();
          create.run(async () => {
            const k = await post<{ key: string }>('/api-keys', { name, permission });
            setCreated(k.key);
            setName('');
            list.reload();
          });
        }}
      >
        <Field label="Key name" name="name" error={create.error}>
          {(id, d, inv) => (
            <input
              id={id}
              required
              value={name}
              aria-describedby={d}
              aria-invalid={inv}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Permission" name="permission" error={create.error}>
          {(id, d, inv) => (
            <select
              id={id}
              value={permission}
              aria-describedby={d}
              aria-invalid={inv}
              onChange={(e) => setPermission(e.currentTarget.value)}
            >
              <option value="full_access">full_access</option>
              <option value="sending_access">sending_access (send only)</option>
            </select>
          )}
        </Field>
        <button type="submit" class="primary" disabled={create.busy}>
          Create key
        </button>
        <FormError error={create.error} fields={['name', 'permission']} />
      </form>
      <p class="muted">A new key has the mode of the key you are signed in with.</p>
      <Status loaded={list} what="API keys" />
      {remove.error ? <ErrorBox error={remove.error} /> : null}
      {list.data && list.data.data.length === 0 && <Empty>No keys.</Empty>}
      {list.data && list.data.data.length > 0 && (
        <div class="table-wrap">
          <table class="list">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Permission</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((k) => (
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
                    <button
                      type="button"
                      class="small danger"
                      disabled={remove.busy}
                      onClick={() =>
                        confirm(`Delete the key ${k.name}? Requests with it are refused at once.`) &&
                        remove.run(async () => {
                          await del(`/api-keys/${k.id}`);
                          list.reload();
                        })
                      }
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
