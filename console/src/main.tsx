// The console's shell: sign-in (the EIP-4361 message shown before the wallet signs), then the
// caller's sandboxes and one sandbox's panels. Session token in sessionStorage only; sign-out revokes it.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Api, describeError } from './api.ts';
import { SandboxView } from './sandbox-view.tsx';
import { SandboxList } from './sandboxes.tsx';
import './style.css';

export const api = new Api('');

export interface Capabilities {
  mode?: string;
  operator?: string;
  serviceId?: string;
  tee?: unknown;
  chain?: { chainId: number; tangle: `0x${string}` };
}

function SignIn({ onDone }: { onDone: () => void }) {
  const [message, setMessage] = useState<string>();
  const [address, setAddress] = useState<`0x${string}`>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const prepare = async () => {
    setError(undefined);
    setBusy(true);
    try {
      const { connect } = await import('./wallet.ts');
      const a = await connect();
      const ch = await api.json<{ message: string }>('POST', '/api/auth/challenge', { address: a });
      setAddress(a);
      setMessage(ch.message);
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  };
  const sign = async () => {
    if (!message || !address) return;
    setBusy(true);
    try {
      const { signMessage } = await import('./wallet.ts');
      const signature = await signMessage(address, message);
      const s = await api.json<{ token: string; address: string }>('POST', '/api/auth/session', {
        message,
        signature,
      });
      api.setSession(s.token, s.address);
      onDone();
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="card signin" aria-labelledby="signin-title">
      <h1 id="signin-title">Sign in with your wallet</h1>
      <p>
        The operator at <code>{location.host}</code> asks your wallet to sign a message (EIP-4361). Nothing is
        sent on chain.
      </p>
      {!message && (
        <button type="button" onClick={prepare} disabled={busy} data-testid="connect">
          Connect wallet
        </button>
      )}
      {message && (
        <>
          <h2>Message you are about to sign</h2>
          <pre class="siwe" data-testid="siwe-message">
            {message}
          </pre>
          <button type="button" onClick={sign} disabled={busy} data-testid="sign">
            Sign and sign in
          </button>
        </>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </main>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(Boolean(api.token));
  const [caps, setCaps] = useState<Capabilities>({});
  const [selected, setSelected] = useState<string | undefined>(
    sessionStorage.getItem('console.selected') ?? undefined,
  );
  useEffect(() => {
    api.json<Capabilities>('GET', '/api/capabilities').then(setCaps, () => {});
  }, []);
  const select = (id: string | undefined) => {
    if (id) sessionStorage.setItem('console.selected', id);
    else sessionStorage.removeItem('console.selected');
    setSelected(id);
  };
  const signOut = async () => {
    try {
      await api.raw('DELETE', '/api/auth/session');
    } catch {
      // Revoked or expired already: forgetting it is all that is left.
    }
    api.setSession(undefined);
    sessionStorage.clear();
    setSelected(undefined);
    setSignedIn(false);
  };
  if (!signedIn) return <SignIn onDone={() => setSignedIn(true)} />;
  return (
    <div class="app">
      <header>
        <strong>Agent sandboxes</strong>
        <span class="who" data-testid="who">
          {api.address}
        </span>
        <button type="button" onClick={signOut} data-testid="signout">
          Sign out
        </button>
      </header>
      {selected ? (
        <SandboxView id={selected} caps={caps} onBack={() => select(undefined)} />
      ) : (
        <SandboxList caps={caps} onOpen={select} />
      )}
    </div>
  );
}

render(<App />, document.getElementById('app')!);
