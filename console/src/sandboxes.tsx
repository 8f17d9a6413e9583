// The caller's sandboxes, by scope (personal, team, all): state, role, resources, timers and when
// each fires, created / last activity; stop, resume, snapshot, branch, a new one from a snapshot,
// delete on chain through the wallet (the owner's actions only for the owner); and the create form.
import { useEffect, useState } from 'preact/hooks';
import { describeError } from './api.ts';
import { BLANK, CreateForm, chainInfo, useCreate } from './create.tsx';
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
  owner: string;
  /** The caller's role: the owner, or a member the owner added (team access). */
  role?: 'owner' | 'member';
  members?: string[];
  /** The latest snapshot (the owner's only): a create from_snapshot takes it. */
  snapshot_id?: string | null;
  source?: { kind: 'sandbox' | 'snapshot'; sandbox_id: string; snapshot_id?: string } | null;
  agent?: boolean;
}

const when = (ms: number) => (ms ? new Date(ms).toLocaleString() : '—');
const kv = (o: Record<string, unknown>) =>
  Object.entries(o)
    .map(([k, v]) => `${k} ${v}`)
    .join(' · ');

/** "stops when idle at …, stops at … (lifetime), deleted at …" for the timers that apply now. */
export function deadlines(d: NonNullable<SandboxView['timer_deadlines']>): string {
  const parts = [
    d.idle_stop_at ? `stops if idle at ${when(d.idle_stop_at)}` : '',
    d.max_lifetime_stop_at ? `stops at ${when(d.max_lifetime_stop_at)} (lifetime)` : '',
    d.delete_at ? `deleted at ${when(d.delete_at)} unless resumed` : '',
  ].filter(Boolean);
  return parts.join(' · ');
}

type Scope = 'all' | 'personal' | 'team';
const short = (id: string) => (id.length > 20 ? `${id.slice(0, 19)}…` : id);

export function SandboxList({ caps, onOpen }: { caps: Capabilities; onOpen: (id: string) => void }) {
  const [list, setList] = useState<SandboxView[]>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState<string>();
  const [scope, setScope] = useState<Scope>((sessionStorage.getItem('console.scope') as Scope) ?? 'all');
  const load = (s: Scope = scope) =>
    api.json<{ sandboxes: SandboxView[] }>('GET', `/api/sandboxes?scope=${s}`).then(
      (r) => setList(r.sandboxes),
      (e) => setError(describeError(e)),
    );
  const creating = useCreate(caps, () => load());
  useEffect(() => {
    load();
  }, []);
  const pickScope = (s: Scope) => {
    sessionStorage.setItem('console.scope', s);
    setScope(s);
    load(s);
  };
  const act = async (id: string, what: 'stop' | 'resume' | 'delete' | 'snapshot') => {
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
  // One click, one create job: the copy's progress shows in the create card below.
  const copy = (from: string, title: string) => {
    document.querySelector('[data-testid="create-form"]')?.scrollIntoView();
    creating.start({ ...BLANK, from }, title);
  };
  return (
    <main>
      <section class="card" aria-labelledby="list-title">
        <div class="row">
          <h1 id="list-title" class="grow">
            Your sandboxes
          </h1>
          <label>
            Show{' '}
            <select
              data-testid="scope"
              value={scope}
              onChange={(e) => pickScope((e.target as HTMLSelectElement).value as Scope)}
            >
              <option value="all">all</option>
              <option value="personal">personal (yours, not shared)</option>
              <option value="team">team (shared: by you or with you)</option>
            </select>
          </label>
        </div>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
        {list?.length === 0 && <p>None yet: create one below.</p>}
        <ul class="sandboxes" data-testid="sandbox-list">
          {list?.map((s) => {
            const owner = s.role !== 'member';
            const copyable = owner && (s.state === 'running' || s.state === 'stopped');
            return (
              <li
                key={s.id}
                class="sandbox"
                data-state={s.state}
                data-id={s.id}
                data-role={s.role ?? 'owner'}
              >
                <div>
                  <button type="button" class="link" onClick={() => onOpen(s.id)} data-testid="open">
                    {s.name || s.id}
                  </button>{' '}
                  <span class={`state ${s.state}`} data-testid="state">
                    {s.state}
                  </span>{' '}
                  <span class="role" data-testid="role">
                    {owner
                      ? (s.members?.length ?? 0) > 0
                        ? `owner · ${s.members!.length} member${s.members!.length > 1 ? 's' : ''}`
                        : 'owner'
                      : `member · shared by ${s.owner}`}
                  </span>
                </div>
                <div class="meta">{kv(s.resources)}</div>
                <div class="meta">timers: {kv(s.timers) || '—'}</div>
                {s.timer_deadlines && (
                  <div class="meta" data-testid="deadlines">
                    {deadlines(s.timer_deadlines)}
                  </div>
                )}
                <div class="meta">
                  created {when(s.created_at)} · last activity {when(s.last_activity_at)}
                  {s.source
                    ? ` · copied from ${s.source.kind} ${short(s.source.snapshot_id ?? s.source.sandbox_id)}`
                    : ''}
                  {s.agent === false ? ' · plain compute' : ''}
                </div>
                {owner && s.snapshot_id && (
                  <div class="meta" data-testid="snapshot-id">
                    snapshot <code>{s.snapshot_id}</code>
                  </div>
                )}
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
                  {owner && s.state === 'running' && (
                    <button
                      type="button"
                      disabled={busy === s.id}
                      onClick={() => act(s.id, 'snapshot')}
                      data-testid="snapshot"
                    >
                      Snapshot
                    </button>
                  )}
                  {copyable && (
                    <button
                      type="button"
                      disabled={creating.busy}
                      onClick={() => copy(s.id, `Branch of ${s.id}`)}
                      data-testid="branch"
                      title="A new sandbox with a copy of this workspace (no secrets copied)"
                    >
                      Branch
                    </button>
                  )}
                  {owner && s.snapshot_id && (
                    <button
                      type="button"
                      disabled={creating.busy}
                      onClick={() => copy(s.snapshot_id!, `From snapshot ${short(s.snapshot_id!)}`)}
                      data-testid="from-snapshot"
                    >
                      New from snapshot
                    </button>
                  )}
                  {owner && (
                    <button
                      type="button"
                      class="danger"
                      disabled={busy === s.id}
                      onClick={() => act(s.id, 'delete')}
                      data-testid="delete"
                    >
                      Delete (on chain)
                    </button>
                  )}
                </div>
              </li>
            );
          })}
        </ul>
        <button type="button" onClick={() => load()}>
          Refresh
        </button>
      </section>
      <CreateForm creating={creating} />
    </main>
  );
}
