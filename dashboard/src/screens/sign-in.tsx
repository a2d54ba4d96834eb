import { useState } from 'preact/hooks';
import { ApiError, api, modeOf, storeKey } from '../api.ts';

/**
 * Sign in with an API key: checked against the API, then kept in sessionStorage for this tab only. `refused`:
 * why the previous key was signed out (the API refused it), shown until the next attempt.
 */
export function SignIn({
  onSignedIn,
  refused,
}: {
  onSignedIn: (key: string) => void;
  refused?: string | null;
}) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(refused ?? null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const k = key.trim();
    if (!k) return setError('Enter an API key.');
    if (!modeOf(k)) return setError('An API key starts with pk_live_ or pk_test_.');
    setBusy(true);
    setError(null);
    try {
      // Any authenticated read tells whether the key is valid; a sending-only key answers 403 and is valid too.
      await api('GET', '/api-keys?limit=1', undefined, k);
    } catch (e) {
      if (!(e instanceof ApiError && e.forbidden)) {
        setBusy(false);
        return setError(e instanceof Error ? e.message : String(e));
      }
    }
    storeKey(k);
    onSignedIn(k);
  };
  return (
    <main class="sign-in" id="main">
      <h1>Postline</h1>
      <form onSubmit={submit} aria-describedby="sign-in-note">
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder="pk_test_…"
          value={key}
          aria-invalid={!!error}
          aria-describedby={error ? 'sign-in-error' : undefined}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
        {error && (
          <p id="sign-in-error" class="field-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p id="sign-in-note" class="muted">
          The key stays in this browser tab (session storage) and is sent only to this Postline's API. A{' '}
          <code>pk_test_</code> key shows test data, a <code>pk_live_</code> key live data. No key yet? Run{' '}
          <code>npx postline orgs create --name Acme</code>.
        </p>
      </form>
    </main>
  );
}
