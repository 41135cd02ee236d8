/** The console's entry: sign-in until a token is held for the tab, then the pages. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { whenUnauthorized } from './api';
import { QueryPage } from './query-page';
import { forgetToken, storedToken } from './session';
import { SignIn } from './sign-in';
import './styles.css';

function App() {
  const [signedIn, setSignedIn] = useState(storedToken() !== undefined);
  useEffect(() => whenUnauthorized(() => setSignedIn(false)), []);
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  return (
    <div class="app">
      <header>
        <strong>Ferry</strong>
        <nav>
          <a href="#/query" class="active">
            Query
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
      <main>
        <QueryPage />
      </main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
