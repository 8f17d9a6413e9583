// Files (browse, view text, upload, download), exec, secrets (names only; values never echoed) and
// port previews (a one-use URL on the port's own preview origin, minted by an authenticated POST,
// opened in a new tab with noopener,noreferrer).
import { useEffect, useState } from 'preact/hooks';
import { describeError } from './api.ts';
import { api } from './main.tsx';
import type { Entry, ExecResult, SandboxOps } from './ops.ts';
import { Err } from './ui.tsx';

export function Files({ ops }: { ops: SandboxOps }) {
  const [dir, setDir] = useState('.');
  const [entries, setEntries] = useState<Entry[]>([]);
  const [view, setView] = useState<{ path: string; text: string }>();
  const [error, setError] = useState<string>();
  const join = (name: string) => (dir === '.' ? name : `${dir}/${name}`);
  const list = (path: string) =>
    ops.list(path).then(
      (r) => {
        setDir(r.path || path);
        setEntries(r.entries);
        setError(undefined);
      },
      (e) => setError(describeError(e)),
    );
  useEffect(() => {
    list('.');
  }, [ops.key]);
  const open = async (name: string) => {
    try {
      const blob = await ops.read(join(name));
      setView({ path: join(name), text: await blob.text() });
    } catch (e) {
      setError(describeError(e));
    }
  };
  const download = async (name: string) => {
    try {
      const url = URL.createObjectURL(await ops.read(join(name)));
      const a = document.createElement('a');
      a.href = url;
      a.download = name;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) {
      setError(describeError(e));
    }
  };
  const upload = async (e: Event) => {
    const input = e.target as HTMLInputElement;
    const file = input.files?.[0];
    if (!file) return;
    try {
      await ops.write(join(file.name), file);
      input.value = '';
      await list(dir);
    } catch (err) {
      setError(describeError(err));
    }
  };
  const up = dir === '.' ? undefined : dir.split('/').slice(0, -1).join('/') || '.';
  return (
    <section aria-label="Files">
      <p class="meta">/{dir === '.' ? '' : dir}</p>
      <ul class="files" data-testid="files">
        {up && (
          <li>
            <button type="button" class="link" onClick={() => list(up)}>
              ..
            </button>
          </li>
        )}
        {entries.map((e) => (
          <li key={e.name} data-name={e.name}>
            {e.type === 'directory' ? (
              <button type="button" class="link" onClick={() => list(join(e.name))}>
                {e.name}/
              </button>
            ) : (
              <>
                <button type="button" class="link" onClick={() => open(e.name)}>
                  {e.name}
                </button>
                <span class="meta"> {e.type === 'file' ? `${e.size} B` : e.type}</span>{' '}
                {e.type === 'file' && (
                  <button type="button" onClick={() => download(e.name)} data-testid="download">
                    Download
                  </button>
                )}
              </>
            )}
          </li>
        ))}
      </ul>
      <label>
        Upload to this folder <input type="file" onChange={upload} data-testid="upload" />
      </label>
      {view && (
        <div>
          <h3>{view.path}</h3>
          <pre class="viewer" data-testid="file-view">
            {view.text}
          </pre>
        </div>
      )}
      <Err e={error} />
    </section>
  );
}

export function Exec({ ops }: { ops: SandboxOps }) {
  const [out, setOut] = useState<ExecResult>();
  const [error, setError] = useState<string>();
  const run = async (e: Event) => {
    e.preventDefault();
    const command = String(new FormData(e.target as HTMLFormElement).get('command') ?? '');
    setError(undefined);
    setOut(undefined); // the last command's output is not this one's
    try {
      setOut(await ops.exec(command));
    } catch (err) {
      setError(describeError(err));
    }
  };
  return (
    <section aria-label="Exec">
      <form onSubmit={run} class="row">
        <label class="grow">
          Command <input name="command" required data-testid="exec-command" />
        </label>
        <button type="submit" data-testid="exec-run">
          Run
        </button>
      </form>
      {out && (
        <div data-testid="exec-output">
          <p class="meta">exit {out.exit_code}</p>
          <pre>{out.stdout}</pre>
          {out.stderr && <pre class="stderr">{out.stderr}</pre>}
        </div>
      )}
      <Err e={error} />
    </section>
  );
}

export function Secrets({ sandbox }: { sandbox: string }) {
  const [names, setNames] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const base = `/api/sandboxes/${sandbox}/secrets`;
  const load = () =>
    api.json<{ names: string[] }>('GET', base).then(
      (r) => setNames(r.names),
      (e) => setError(describeError(e)),
    );
  useEffect(() => {
    load();
  }, [sandbox]);
  const set = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    const name = String(f.get('name') ?? '');
    const value = String(f.get('value') ?? '');
    form.reset(); // the value leaves the page's inputs at once
    setBusy(true);
    setError(undefined);
    try {
      // The API replaces the whole set; values of existing names are not readable, so they are sent
      // only when the user enters them again. Here: one secret at a time replaces the set.
      await api.json('POST', base, { env: { [name]: value } });
      await load();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  const wipe = async () => {
    setBusy(true);
    try {
      await api.json('DELETE', base);
      await load();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-label="Secrets">
      <p>
        Names only: values are never shown again. Setting replaces all secrets (the container is recreated).
      </p>
      <ul data-testid="secret-names">
        {names.map((n) => (
          <li key={n}>{n}</li>
        ))}
      </ul>
      <form onSubmit={set} class="row" autocomplete="off">
        <label>
          Name <input name="name" required pattern="[A-Za-z_][A-Za-z0-9_]*" data-testid="secret-name" />
        </label>
        <label>
          Value <input name="value" type="password" required autocomplete="off" data-testid="secret-value" />
        </label>
        <button type="submit" disabled={busy} data-testid="secret-set">
          Set
        </button>
        <button type="button" disabled={busy} onClick={wipe} class="danger">
          Wipe all
        </button>
      </form>
      <Err e={error} />
    </section>
  );
}

export function Preview({ sandbox, ports }: { sandbox: string; ports: string[] }) {
  const [error, setError] = useState<string>();
  const [opened, setOpened] = useState<{ url: string; origin: string }>();
  const open = async (e: Event) => {
    e.preventDefault();
    const port = Number(new FormData(e.target as HTMLFormElement).get('port'));
    setError(undefined);
    setOpened(undefined);
    try {
      const r = await api.json<{ url: string; origin: string }>(
        'POST',
        `/api/sandboxes/${sandbox}/previews`,
        {
          port,
        },
      );
      // The preview runs on its own origin, with no handle back to this page (window.opener) and
      // no copy of this tab's sessionStorage (the session): noopener, noreferrer.
      window.open(r.url, '_blank', 'noopener,noreferrer');
      setOpened(r);
    } catch (err) {
      setError(describeError(err));
    }
  };
  return (
    <section aria-label="Port preview">
      <p>Opens an exposed port in a new tab with a credential valid for that port only, for a few minutes.</p>
      <form onSubmit={open} class="row">
        <label>
          Port{' '}
          <input
            name="port"
            type="number"
            min={1}
            max={65535}
            required
            list="ports"
            data-testid="preview-port"
          />
        </label>
        <datalist id="ports">
          {ports.map((p) => (
            <option key={p} value={p} />
          ))}
        </datalist>
        <button type="submit">Open preview</button>
      </form>
      {opened && (
        <p data-testid="preview-opened">
          Opened {opened.origin} in a new tab. Blocked by the browser?{' '}
          <a href={opened.url} target="_blank" rel="noopener noreferrer">
            Open it here
          </a>{' '}
          (once; open another preview for a second tab).
        </p>
      )}
      <Err e={error} />
    </section>
  );
}
