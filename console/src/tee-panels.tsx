// The owner tabs of a TEE sandbox (exec, files, chat, terminal, secrets): the same screens as the
// plain ones, but every request goes over the owner channel of the enclave the Attestation tab
// verified (tee-ops.ts), so commands, outputs, files, prompts, replies, keystrokes and secret values
// cross the operator only as sealed bytes. Until a key is verified they say so and send nothing.
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from './api.ts';
import { applyEvent } from './chat.tsx';
import type { TeeEntry, TeeOps } from './tee-ops.ts';
import { type TeeSession, useTeeSession } from './tee-session.ts';
import { nonceStyles } from './terminal.tsx';

const Err = ({ e }: { e?: string }) =>
  e ? (
    <p role="alert" class="error">
      {e}
    </p>
  ) : null;

/** The tab's content once the enclave is verified; before that, where to verify it. */
export function TeeTab({
  sandbox,
  tab,
  onAttest,
}: {
  sandbox: string;
  tab: 'Chat' | 'Terminal' | 'Files' | 'Exec' | 'Secrets';
  onAttest: () => void;
}) {
  const s = useTeeSession(sandbox);
  if (!s)
    return (
      <section data-testid="tee-needs-verify">
        <p>
          This sandbox runs in a TEE enclave that takes orders only from its owner, end to end. Verify the
          enclave first: nothing is sent until its key is verified.
        </p>
        <button type="button" onClick={onAttest} data-testid="tee-go-attest">
          Go to Attestation
        </button>
      </section>
    );
  return (
    <div data-testid="tee-tab">
      <p class="meta">End to end to the {s.tee} enclave (the operator relays sealed bytes).</p>
      {tab === 'Exec' && <TeeExec ops={s.ops} />}
      {tab === 'Files' && <TeeFiles ops={s.ops} />}
      {tab === 'Chat' && <TeeChat ops={s.ops} />}
      {tab === 'Terminal' && <TeeTerminal ops={s.ops} />}
      {tab === 'Secrets' && <TeeSecrets set={s.setSecrets} />}
    </div>
  );
}

function TeeExec({ ops }: { ops: TeeOps }) {
  const [out, setOut] = useState<{ exit_code: number; stdout: string; stderr: string }>();
  const [error, setError] = useState<string>();
  const run = async (e: Event) => {
    e.preventDefault();
    const command = String(new FormData(e.target as HTMLFormElement).get('command') ?? '');
    setError(undefined);
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

function TeeFiles({ ops }: { ops: TeeOps }) {
  const [dir, setDir] = useState('.');
  const [entries, setEntries] = useState<TeeEntry[]>([]);
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
  }, [ops]);
  const open = async (name: string) => {
    try {
      setView({ path: join(name), text: new TextDecoder().decode(await ops.read(join(name))) });
    } catch (e) {
      setError(describeError(e));
    }
  };
  const upload = async (e: Event) => {
    const input = e.target as HTMLInputElement;
    const file = input.files?.[0];
    if (!file) return;
    try {
      await ops.write(join(file.name), new Uint8Array(await file.arrayBuffer()));
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
            <button
              type="button"
              class="link"
              onClick={() => (e.type === 'directory' ? list(join(e.name)) : open(e.name))}
            >
              {e.name}
              {e.type === 'directory' ? '/' : ''}
            </button>
            {e.type === 'file' && <span class="meta"> {e.size} B</span>}
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

type ChatState = Parameters<typeof applyEvent>[0];

function TeeChat({ ops }: { ops: TeeOps }) {
  // No operator run record for an enclave run: the conversation lives in this page (no resume).
  const [state, setState] = useState<ChatState>({ blocks: [] });
  const [error, setError] = useState<string>();
  const abort = useRef<AbortController>();
  useEffect(() => () => abort.current?.abort(), []);
  const send = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const message = String(new FormData(form).get('message') ?? '').trim();
    if (!message) return;
    setError(undefined);
    const ctl = new AbortController();
    abort.current = ctl;
    let s: ChatState = { prompt: message, blocks: [] };
    setState(s);
    form.reset();
    try {
      for await (const ev of ops.run(message, ctl.signal)) {
        s = applyEvent(s, ev);
        setState(s);
      }
      setState({ ...s, status: ctl.signal.aborted ? 'cancelled' : (s.status ?? 'completed') });
    } catch (err) {
      setError(describeError(err));
    }
  };
  const running = Boolean(state.prompt && !state.status);
  return (
    <section aria-label="Agent chat" class="chat">
      {state.prompt && <p class="prompt">› {state.prompt}</p>}
      <div class="blocks" data-testid="chat-blocks" aria-live="polite">
        {state.blocks.map((b) => (
          <pre key={b.id} class={`block ${b.kind}`} data-testid={`block-${b.kind}`}>
            {b.kind === 'tool' ? `tool ${b.tool?.name} · ${b.tool?.status}` : b.text}
          </pre>
        ))}
      </div>
      {state.finalText !== undefined && (
        <div class="final" data-testid="final-answer">
          <h3>Answer</h3>
          <pre>{state.finalText}</pre>
        </div>
      )}
      {state.status && (
        <p class="meta" data-testid="run-status">
          run {state.status}
        </p>
      )}
      <Err e={error} />
      <form onSubmit={send} class="row">
        <label class="grow">
          <span class="sr">Message</span>
          <textarea name="message" rows={2} placeholder="Ask the agent…" data-testid="chat-input" />
        </label>
        <button type="submit" disabled={running} data-testid="chat-send">
          Send
        </button>
        {running && (
          <button type="button" onClick={() => abort.current?.abort()} data-testid="chat-cancel">
            Cancel
          </button>
        )}
      </form>
    </section>
  );
}

function TeeTerminal({ ops }: { ops: TeeOps }) {
  const host = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string>();
  useEffect(() => {
    const ctl = new AbortController();
    let dispose = () => {};
    (async () => {
      nonceStyles();
      const [{ Terminal }] = await Promise.all([
        import('@xterm/xterm'),
        import('@xterm/xterm/css/xterm.css'),
      ]);
      const el = host.current!;
      const size = () => ({
        cols: Math.max(20, Math.floor(el.clientWidth / 9)),
        rows: Math.max(8, Math.floor(el.clientHeight / 17)),
      });
      const tid = await ops.createTerminal(size().cols, size().rows);
      const term = new Terminal({ ...size(), fontSize: 14 });
      term.open(el);
      // One sealed request at a time, keystrokes typed meanwhile batched: order is kept.
      let pending = '';
      let sending = false;
      const flush = async () => {
        if (sending || !pending) return;
        sending = true;
        const data = pending;
        pending = '';
        try {
          await ops.terminalInput(tid, data);
        } catch (e) {
          setError(describeError(e));
        } finally {
          sending = false;
          void flush();
        }
      };
      term.onData((d) => {
        pending += d;
        void flush();
      });
      const onResize = () => {
        const s = size();
        term.resize(s.cols, s.rows);
        ops.resizeTerminal(tid, s.cols, s.rows).catch(() => {});
      };
      window.addEventListener('resize', onResize);
      dispose = () => {
        window.removeEventListener('resize', onResize);
        term.dispose();
        ops.deleteTerminal(tid).catch(() => {});
      };
      term.focus();
      for await (const ev of ops.terminalEvents(tid, ctl.signal)) {
        try {
          const f = JSON.parse(ev.data) as { type?: string; properties?: { text?: string } };
          if (typeof f.properties?.text === 'string') term.write(f.properties.text);
          if (f.type === 'session.exited') term.write('\r\n[session ended]\r\n');
        } catch {
          term.write(ev.data);
        }
      }
    })().catch((e) => {
      if (!ctl.signal.aborted) setError(describeError(e));
    });
    return () => {
      ctl.abort();
      dispose();
    };
  }, [ops]);
  return (
    <div class="term">
      <div ref={host} class="xterm-host" data-testid="terminal" />
      <Err e={error} />
    </div>
  );
}

function TeeSecrets({ set: send }: { set: TeeSession['setSecrets'] }) {
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string>();
  const [error, setError] = useState<string>();
  const set = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    const name = String(f.get('name') ?? '');
    const value = String(f.get('value') ?? '');
    form.reset(); // the value leaves the page's inputs at once
    setBusy(true);
    setError(undefined);
    setDone(undefined);
    try {
      const r = await send({ [name]: value });
      if (!r.success)
        throw new Error('the enclave refused the sealed secrets (it says no more, by design); retry');
      setDone(`${name} sealed to the enclave key and set (opened only inside the enclave)`);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-label="Secrets">
      <p>
        Sealed in this page to the verified enclave key: the operator passes on ciphertext only. Names and
        values are known only inside the enclave.
      </p>
      <form onSubmit={set} class="row" autocomplete="off">
        <label>
          Name <input name="name" required pattern="[A-Za-z_][A-Za-z0-9_]*" data-testid="secret-name" />
        </label>
        <label>
          Value <input name="value" type="password" required autocomplete="off" data-testid="secret-value" />
        </label>
        <button type="submit" disabled={busy} data-testid="secret-set">
          Seal and set
        </button>
      </form>
      {done && (
        <p class="verified" data-testid="secret-done">
          {done}
        </p>
      )}
      <Err e={error} />
    </section>
  );
}
