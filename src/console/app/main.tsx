/** The console's entry: sign-in until a token is held for the tab, then the pages. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { whenUnauthorized } from './api';
import { DatasetsPage } from './datasets-page';
import { LivePage } from './live-page';
import { MonitorsPage } from './monitors-page';
import { QueryPage } from './query-page';
import { forgetToken, storedToken } from './session';
import { SignIn } from './sign-in';
import './styles.css';

type Page = 'query' | 'live' | 'datasets' | 'monitors';

/** The page the address names: #/live, #/datasets, #/monitors, else the query page (#/query, a shared query, or nothing). */
const pageOf = (hash: string): Page => {
  const m = /^#\/(live|datasets|monitors)\b/.exec(hash);
  return m ? (m[1] as Page) : 'query';
};

const PAGES: Record<Page, () => preact.JSX.Element> = {
  query: () => <QueryPage />,
  live: () => <LivePage />,
  datasets: () => <DatasetsPage />,
  monitors: () => <MonitorsPage />,
};

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
          <a href="#/datasets" class={page === 'datasets' ? 'active' : ''} data-testid="nav-datasets">
            Datasets
          </a>
          <a href="#/monitors" class={page === 'monitors' ? 'active' : ''} data-testid="nav-monitors">
            Monitors
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
      <main>{PAGES[page]()}</main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
