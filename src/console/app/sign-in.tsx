/** Sign-in: a personal access token or an API token, checked against the service before it is kept for the tab. */
import { useState } from 'preact/hooks';
import { api, ApiError } from './api';
import { keepToken } from './session';
import { ErrorNote } from './error-note';

export function SignIn(p: { onSignedIn(): void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      // Any token may list the datasets it can see: a refused token is said here, not on the first query.
      await api('GET', '/v2/datasets', undefined, { token: token.trim() });
      keepToken(token.trim());
      setToken('');
      p.onSignedIn();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : (err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="sign-in" onSubmit={(e) => void submit(e)} autocomplete="off">
      <h1>Ferry</h1>
      <p>Sign in with a personal access token or an API token. It is kept for this tab only.</p>
      <input
        type="password"
        name="token"
        aria-label="Token"
        placeholder="xapt-… or xaat-…"
        value={token}
        onInput={(e) => setToken((e.currentTarget as HTMLInputElement).value)}
        autofocus
      />
      <button type="submit" disabled={busy || !token.trim()}>
        Sign in
      </button>
      <ErrorNote message={error} />
    </form>
  );
}
