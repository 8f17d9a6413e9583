// The owner tabs of a TEE sandbox (exec, files, chat, terminal, secrets): the same screens as the
// plain ones, but every request goes over the owner channel of the enclave the Attestation tab
// verified (tee-ops.ts), so commands, outputs, files, prompts, replies, keystrokes and secret values
// cross the operator only as sealed bytes. Until a key is verified they say so and send nothing.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { describeError } from './api.ts';
import { applyEvent, type ChatState, ChatView } from './chat.tsx';
import type { SandboxOps } from './ops.ts';
import { Exec, Files } from './panels.tsx';
import type { TeeOps } from './tee-ops.ts';
import { type TeeSession, useTeeSession } from './tee-session.ts';
import { Terminals } from './terminal.tsx';
import { Err } from './ui.tsx';

/** The owner channel as the screens' operations: nothing here goes through the operator API. */
function channelOps(o: TeeOps): SandboxOps {
  return {
    key: `tee:${o.sandboxId}`,
    exec: (command) => o.exec(command),
    list: (path) => o.list(path),
    read: async (path) => new Blob([(await o.read(path)) as BlobPart]),
    write: async (path, content) => o.write(path, new Uint8Array(await content.arrayBuffer())),
    terminal: {
      create: (cols, rows) => o.createTerminal(cols, rows),
      stream: async (id, onEvent, signal) => {
        for await (const ev of o.terminalEvents(id, signal)) onEvent(ev);
      },
      input: (id, data) => o.terminalInput(id, data),
      resize: (id, cols, rows) => o.resizeTerminal(id, cols, rows),
      close: (id) => o.deleteTerminal(id),
    },
  };
}

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
  const ops = useMemo(() => (s ? channelOps(s.ops) : undefined), [s]);
  if (!s || !ops)
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
      {tab === 'Exec' && <Exec ops={ops} />}
      {tab === 'Files' && <Files ops={ops} />}
      {tab === 'Chat' && <TeeChat ops={s.ops} />}
      {tab === 'Terminal' && <Terminals ops={ops} />}
      {tab === 'Secrets' && <TeeSecrets set={s.setSecrets} />}
    </div>
  );
}

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
    <ChatView
      state={state}
      error={error}
      running={running}
      onSend={send}
      onCancel={() => abort.current?.abort()}
    />
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
