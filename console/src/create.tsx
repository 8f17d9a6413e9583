// Creating a sandbox (job 0 through the wallet) and following its provision: the create form
// (size presets from GET /api/shapes, stop timers, plain compute, a workspace to copy) and the
// one-click creates of the list (Branch, New from snapshot) share one progress card.
import { useEffect, useState } from 'preact/hooks';
import { describeError } from './api.ts';
import type { CreateForm as CreateFields } from './chain.ts';
import { api, type Capabilities } from './main.tsx';

export type { CreateFields };

export function chainInfo(caps: Capabilities) {
  if (!caps.chain || !caps.serviceId)
    throw new Error('this operator does not publish its chain (capabilities.chain)');
  return { chainId: caps.chain.chainId, tangle: caps.chain.tangle, serviceId: BigInt(caps.serviceId) };
}

/** A create with every field left to its default: the operator's default preset, the CLI's timers. */
export const BLANK: CreateFields = {
  name: '',
  shape: '',
  cpuCores: 0,
  memoryMb: 0,
  diskGb: 0,
  ports: [],
  envJson: '',
  from: '',
  lifetimeSeconds: 0,
  idleTimeoutSeconds: 0,
  deleteAfterStoppedSeconds: 0,
  agent: true,
};

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
/** An empty number field: 0, "the default" (from the preset, the CLI's timers, the operator's). */
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

export interface Creating {
  /** What this page did (wallet, call id), then every phase the operator recorded, in order. */
  phases: string[];
  /** What was asked ("Branch of sbx-…"), shown above the phases. */
  title: string;
  error: string | undefined;
  busy: boolean;
  start: (fields: CreateFields, title?: string) => Promise<void>;
}

/** One create at a time: submits job 0 and follows GET /api/provisions/{callId} until it runs. */
export function useCreate(caps: Capabilities, onCreated: () => void): Creating {
  // The phases come from the provision's own history (`phases`), so a phase shorter than the
  // poll interval (a fork's workspace_copy can take well under 500 ms) is still listed.
  const [steps, setSteps] = useState<string[]>([]);
  const [phases, setPhases] = useState<string[]>([]);
  const [title, setTitle] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const start = async (fields: CreateFields, what = 'New sandbox') => {
    setBusy(true);
    setError(undefined);
    setTitle(what);
    setSteps(['submitting job 0 through your wallet']);
    setPhases([]);
    try {
      const { createRefusal, submitCreate } = await import('./chain.ts');
      const { callId, blockNumber, operator } = await submitCreate(
        chainInfo(caps),
        api.address as `0x${string}`,
        fields,
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
  return { phases: [...steps, ...phases], title, error, busy, start };
}

/** The progress of the latest create (the form's or a one-click one). */
export function Progress({ c }: { c: Creating }) {
  return (
    <>
      {c.phases.length > 0 && (
        <>
          <p class="meta" data-testid="creating">
            {c.title}
          </p>
          <ol class="phases" data-testid="phases" aria-live="polite">
            {c.phases.map((p, i) => (
              // A provision resumed after an operator restart may enter a phase again: keyed by place.
              // biome-ignore lint/suspicious/noArrayIndexKey: the list only grows at its end
              <li key={i}>{p}</li>
            ))}
          </ol>
        </>
      )}
      {c.error && (
        <p role="alert" class="error">
          {c.error}
        </p>
      )}
    </>
  );
}

export function CreateForm({ creating }: { creating: Creating }) {
  const [shapes, setShapes] = useState<Shapes>();
  useEffect(() => {
    fetch('/api/shapes')
      .then((r) => (r.ok ? (r.json() as Promise<Shapes>) : undefined))
      .then(setShapes, () => setShapes(undefined));
  }, []);
  const submit = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const ports = String(f.get('ports') ?? '')
      .split(/[ ,]+/)
      .filter(Boolean)
      .map(Number);
    creating.start({
      name: String(f.get('name') ?? ''),
      shape: String(f.get('shape') ?? ''),
      cpuCores: num(f.get('cpu')),
      memoryMb: num(f.get('memory')),
      diskGb: num(f.get('disk')),
      ports,
      envJson: String(f.get('env') ?? ''),
      from: String(f.get('from') ?? ''),
      lifetimeSeconds: num(f.get('lifetime')),
      idleTimeoutSeconds: num(f.get('idle')),
      deleteAfterStoppedSeconds: num(f.get('delete_after')),
      agent: f.get('plain') === null,
    });
  };
  return (
    <form class="card" onSubmit={submit} aria-label="Create a sandbox" data-testid="create-form">
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
      <fieldset>
        <legend>Timers (seconds; the operator may lower them to its ceilings)</legend>
        <label>
          Stop after running for (lifetime; each resume starts it again)
          <input name="lifetime" type="number" min={1} placeholder="3600" data-testid="create-lifetime" />
        </label>
        <label>
          Stop when idle for
          <input name="idle" type="number" min={1} placeholder="900" data-testid="create-idle" />
        </label>
        <label>
          Delete after stopped for (a resume restarts the clock)
          <input
            name="delete_after"
            type="number"
            min={1}
            placeholder="the operator's default (30 days)"
            data-testid="create-delete-after"
          />
        </label>
      </fieldset>
      <label>
        Ports to expose <input name="ports" placeholder="3000, 8080" />
      </label>
      <label>
        Environment (JSON, public on chain; put secrets in Secrets)
        <input name="env" placeholder='{"LOG_LEVEL":"debug"}' data-testid="create-env" />
      </label>
      <label class="choice">
        <input type="checkbox" name="plain" data-testid="create-plain" /> Plain compute: no coding agent, no
        model credentials, no startup scripts
      </label>
      <label>
        Copy the workspace of (optional: a sandbox id or a snapshot id of yours; no secrets are copied)
        <input name="from" placeholder="sbx-… or sha256:…" data-testid="create-from" />
      </label>
      <button type="submit" disabled={creating.busy} data-testid="create">
        Create
      </button>
      <Progress c={creating} />
    </form>
  );
}
