/** The console's entry: sign-in until a token is held for the tab, then the pages. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { whenUnauthorized } from './api';
import { LivePage } from './live-page';
import { QueryPage } from './query-page';
import { forgetToken, storedToken } from './session';
import { SignIn } from './sign-in';
import './styles.css';

/** The page the address names: #/live, else the query page (#/query, a shared query, or nothing). */
const pageOf = (hash: string) => (hash.startsWith('#/live') ? 'live' : 'query');

function App() {
  const [signedIn, setSignedIn] = useState(storedToken() !== undefined);
  const [page, setPage] = useState(pageOf(location.hash));
  useEffect(() => whenUnauthorized(() => setSignedIn(false)), []);
  useEffect(() => {
    const follow = () => setPage(pageOf(location.hash));
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  return (
    <div class="app">
      <header>
        <strong>Ferry</strong>
        <nav>
          <a href="#/query" class={page === 'query' ? 'active' : ''}>
            Query
          </a>
          <a href="#/live" class={page === 'live' ? 'active' : ''} data-testid="nav-live">
            Live
          </a>
        </nav>
        <button
          class="sign-out"
          onClick={() => {
            forgetToken();
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </header>
      <main>{page === 'live' ? <LivePage /> : <QueryPage />}</main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
