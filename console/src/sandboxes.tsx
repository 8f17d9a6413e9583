// The caller's sandboxes (state, resources, timers, created / last activity; stop, resume, delete
// on chain through the wallet) and the create form (job 0 through the wallet, then the operator's
// provisioning phases live until the sandbox runs).
import { useEffect, useState } from 'preact/hooks';
import { describeError } from './api.ts';
import { api, type Capabilities } from './main.tsx';

export interface SandboxView {
  id: string;
  name?: string;
  state: string;
  resources: Record<string, unknown>;
  timers: Record<string, unknown>;
  /** When each timer fires (epoch ms; null: not in this state). */
  timer_deadlines?: {
    idle_stop_at: number | null;
    max_lifetime_stop_at: number | null;
    delete_at: number | null;
  };
  ports: Record<string, unknown>;
  created_at: number;
  last_activity_at: number;
  secret_names: string[];
}

const when = (ms: number) => (ms ? new Date(ms).toLocaleString() : '—');
const kv = (o: Record<string, unknown>) =>
  Object.entries(o)
    .map(([k, v]) => `${k} ${v}`)
    .join(' · ');

/** "stops when idle at …, stops at … (lifetime), deleted at …" for the timers that apply now. */
function deadlines(d: NonNullable<SandboxView['timer_deadlines']>): string {
  const parts = [
    d.idle_stop_at ? `stops if idle at ${when(d.idle_stop_at)}` : '',
    d.max_lifetime_stop_at ? `stops at ${when(d.max_lifetime_stop_at)} (lifetime)` : '',
    d.delete_at ? `deleted at ${when(d.delete_at)} unless resumed` : '',
  ].filter(Boolean);
  return parts.join(' · ');
}

export function chainInfo(caps: Capabilities) {
  if (!caps.chain || !caps.serviceId)
    throw new Error('this operator does not publish its chain (capabilities.chain)');
  return { chainId: caps.chain.chainId, tangle: caps.chain.tangle, serviceId: BigInt(caps.serviceId) };
}

interface Size {
  cpuCores: number;
  memoryMb: number;
  diskGb: number;
}
/** GET /api/shapes: the operator's presets, its default preset and its ceiling. */
interface Shapes {
  presets: Array<Size & { name: string; fits: boolean }>;
  default: string;
  ceiling: Size;
}
const sizeText = (s: Size) => `${s.cpuCores} CPU · ${s.memoryMb} MB · ${s.diskGb} GB`;
/** An empty number field: 0, "from the preset" (the operator resolves it). */
const num = (v: FormDataEntryValue | null) => (v === null || String(v).trim() === '' ? 0 : Number(v));

/** The create's on-chain refusal, once its result is mined (up to ~30 s), else undefined. */
async function waitForRefusal(
  info: Parameters<typeof import('./chain.ts').createRefusal>[0],
  callId: bigint,
  fromBlock: bigint,
  read: typeof import('./chain.ts').createRefusal,
): Promise<string | undefined> {
  for (let i = 0; i < 60; i++) {
    const refused = await read(info, callId, fromBlock);
    if (refused) return refused;
    await new Promise((r) => setTimeout(r, 500));
  }
  return undefined;
}

function CreateForm({ caps, onCreated }: { caps: Capabilities; onCreated: () => void }) {
  const [shapes, setShapes] = useState<Shapes>();
  useEffect(() => {
    fetch('/api/shapes')
      .then((r) => (r.ok ? (r.json() as Promise<Shapes>) : undefined))
      .then(setShapes, () => setShapes(undefined));
  }, []);
  // What the page did (wallet, call id), then every phase the operator recorded, in order: from
  // the provision's own history, so a phase shorter than the poll interval is still shown.
  const [steps, setSteps] = useState<string[]>([]);
  const [phases, setPhases] = useState<string[]>([]);
  const phase = [...steps, ...phases];
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    setBusy(true);
    setError(undefined);
    setSteps(['submitting job 0 through your wallet']);
    setPhases([]);
    try {
      const { createRefusal, submitCreate } = await import('./chain.ts');
      const ports = String(f.get('ports') ?? '')
        .split(/[ ,]+/)
        .filter(Boolean)
        .map(Number);
      const { callId, blockNumber, operator } = await submitCreate(
        chainInfo(caps),
        api.address as `0x${string}`,
        {
          name: String(f.get('name') ?? ''),
          shape: String(f.get('shape') ?? ''),
          cpuCores: num(f.get('cpu')),
          memoryMb: num(f.get('memory')),
          diskGb: num(f.get('disk')),
          ports,
          envJson: String(f.get('env') ?? ''),
          from: String(f.get('from') ?? ''),
        },
      );
      setSteps((p) => [...p, `call ${callId} submitted`]);
      if (operator && caps.operator && operator.toLowerCase() !== caps.operator.toLowerCase()) {
        throw new Error(
          `the blueprint assigned call ${callId} to operator ${operator}, not this one (${caps.operator}); follow it in that operator's console`,
        );
      }
      for (;;) {
        // With the session: the owner also sees the sandbox id and the failure reason.
        const res = await fetch(`/api/provisions/${callId}`, {
          headers: api.token ? { authorization: `Bearer ${api.token}` } : {},
        });
        if (res.ok) {
          const pv = (await res.json()) as {
            phase?: string;
            phases?: Array<{ phase: string; at: number }>;
            error?: string;
            sandboxId?: string;
          };
          setPhases((pv.phases ?? []).map((p) => p.phase));
          if (pv.phase === 'failed') {
            if (pv.error) throw new Error(`provisioning failed: ${pv.error}`);
            // The reason is the owner's (or not given to this session): the chain result says it.
            const refused = await waitForRefusal(chainInfo(caps), callId, blockNumber, createRefusal);
            throw new Error(refused ?? 'provisioning failed: see the operator log');
          }
          if (pv.phase === 'ready' || pv.phase === 'running') break;
        } else if (res.status === 404) {
          // Refused before provisioning began (e.g. a field the runtime refuses): the chain says why.
          const refused = await createRefusal(chainInfo(caps), callId, blockNumber);
          if (refused) throw new Error(refused);
        }
        await new Promise((r) => setTimeout(r, 500));
      }
      onCreated();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-label="Create a sandbox">
      <h2>Create a sandbox (on chain)</h2>
      <label>
        Name <input name="name" maxLength={255} />
      </label>
      <label>
        Size
        <select name="shape" data-testid="create-shape">
          {(shapes?.presets ?? []).map((p) => (
            <option key={p.name} value={p.name} disabled={!p.fits} selected={p.name === shapes?.default}>
              {p.name} ({sizeText(p)}){p.name === shapes?.default ? ', default' : ''}
              {p.fits ? '' : ', above the ceiling'}
            </option>
          ))}
        </select>
      </label>
      {shapes && (
        <p class="meta">Largest size: {sizeText(shapes.ceiling)}. Numbers below override the preset.</p>
      )}
      <label>
        CPU cores <input name="cpu" type="number" min={1} placeholder="from the preset" />
      </label>
      <label>
        Memory (MB) <input name="memory" type="number" min={128} placeholder="from the preset" />
      </label>
      <label>
        Disk (GB) <input name="disk" type="number" min={1} placeholder="from the preset" />
      </label>
      <label>
        Ports to expose <input name="ports" placeholder="3000, 8080" />
      </label>
      <label>
        Environment (JSON, public on chain; put secrets in Secrets)
        <input name="env" placeholder='{"LOG_LEVEL":"debug"}' data-testid="create-env" />
      </label>
      <label>
        Copy the workspace of (optional: a sandbox id or a snapshot id of yours; no secrets are copied)
        <input name="from" placeholder="sbx-… or sha256:…" data-testid="create-from" />
      </label>
      <button type="submit" disabled={busy} data-testid="create">
        Create
      </button>
      {phase.length > 0 && (
        <ol class="phases" data-testid="phases" aria-live="polite">
          {phase.map((p, i) => (
            // A provision resumed after an operator restart may enter a phase again: keyed by place.
            // biome-ignore lint/suspicious/noArrayIndexKey: the list only grows at its end
            <li key={i}>{p}</li>
          ))}
        </ol>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </form>
  );
}

export function SandboxList({ caps, onOpen }: { caps: Capabilities; onOpen: (id: string) => void }) {
  const [list, setList] = useState<SandboxView[]>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState<string>();
  const load = () =>
    api.json<{ sandboxes: SandboxView[] }>('GET', '/api/sandboxes').then(
      (r) => setList(r.sandboxes),
      (e) => setError(describeError(e)),
    );
  useEffect(() => {
    load();
  }, []);
  const act = async (id: string, what: 'stop' | 'resume' | 'delete') => {
    setBusy(id);
    setError(undefined);
    try {
      if (what === 'delete') {
        const { submitDelete } = await import('./chain.ts');
        await submitDelete(chainInfo(caps), api.address as `0x${string}`, id);
        for (let i = 0; i < 120; i++) {
          const r = await api.json<{ sandboxes: SandboxView[] }>('GET', '/api/sandboxes');
          if (!r.sandboxes.some((s) => s.id === id)) break;
          await new Promise((res) => setTimeout(res, 500));
        }
      } else {
        await api.json('POST', `/api/sandboxes/${id}/${what}`);
      }
      await load();
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(undefined);
    }
  };
  return (
    <main>
      <section class="card" aria-labelledby="list-title">
        <h1 id="list-title">Your sandboxes</h1>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
        {list?.length === 0 && <p>None yet: create one below.</p>}
        <ul class="sandboxes" data-testid="sandbox-list">
          {list?.map((s) => (
            <li key={s.id} class="sandbox" data-state={s.state} data-id={s.id}>
              <div>
                <button type="button" class="link" onClick={() => onOpen(s.id)} data-testid="open">
                  {s.name || s.id}
                </button>{' '}
                <span class={`state ${s.state}`} data-testid="state">
                  {s.state}
                </span>
              </div>
              <div class="meta">{kv(s.resources)}</div>
              <div class="meta">timers: {kv(s.timers) || '—'}</div>
              {s.timer_deadlines && <div class="meta">{deadlines(s.timer_deadlines)}</div>}
              <div class="meta">
                created {when(s.created_at)} · last activity {when(s.last_activity_at)}
              </div>
              <div class="actions">
                {s.state === 'running' && (
                  <button type="button" disabled={busy === s.id} onClick={() => act(s.id, 'stop')}>
                    Stop
                  </button>
                )}
                {s.state === 'stopped' && (
                  <button type="button" disabled={busy === s.id} onClick={() => act(s.id, 'resume')}>
                    Resume
                  </button>
                )}
                <button
                  type="button"
                  class="danger"
                  disabled={busy === s.id}
                  onClick={() => act(s.id, 'delete')}
                  data-testid="delete"
                >
                  Delete (on chain)
                </button>
              </div>
            </li>
          ))}
        </ul>
        <button type="button" onClick={load}>
          Refresh
        </button>
      </section>
      <CreateForm caps={caps} onCreated={load} />
    </main>
  );
}
