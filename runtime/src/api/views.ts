// What the API shows of a sandbox: an explicit allow-list of record fields (never the sidecar
// token, never env values, never container internals).
import type { SandboxRecord } from '../sandbox/record.ts';
import { runtimeOf, type SandboxRuntime } from '../sandbox/runtimes.ts';

export interface SandboxView {
  id: string;
  name?: string;
  owner: string;
  state: string;
  resources: Record<string, unknown>;
  timers: Record<string, unknown>;
  /** Container port → `{ proxy }`, the path (relative to the sandbox's route) that reaches it. */
  ports: Record<string, { proxy: string }>;
  tier?: string | null;
  created_at: number;
  last_activity_at: number;
  started_at?: number | null;
  stopped_at?: number | null;
  stop_reason?: string | null;
  timer_deadlines: {
    idle_stop_at: number | null;
    max_lifetime_stop_at: number | null;
    delete_at: number | null;
  };
  /** false: plain compute (no coding agent). */
  agent: boolean;
  /** The OCI runtime its containers run under: runc, or runsc (gVisor). */
  runtime: SandboxRuntime;
  /** Its image; a registry image by digest (what was pulled), after its pull. */
  image: string;
  /** `mounted`: a registry image, with the sidecar mounted read-only from the operator's kit. */
  sidecar: 'image' | 'mounted';
  /** The sandbox's latest snapshot (create from_snapshot takes it); null: none. */
  snapshot_id: string | null;
  /** What this sandbox was copied from (create from_sandbox / from_snapshot); null: a fresh one. */
  source: { kind: 'sandbox' | 'snapshot'; sandbox_id: string; snapshot_id?: string } | null;
  /** Its own network policy (enforced by the operator, outside it); null: none, SANDBOX_EGRESS applies. */
  network: { mode: 'default' | 'strict'; allow_domains: string[]; include_implicit_domains: boolean } | null;
  /** The caller's role on it (team access). */
  role: 'owner' | 'member';
  members: string[];
  /** Names only, and only for the owner (secrets are the owner's). */
  secret_names: string[];
  /** SSH (on while the owner has added a key and the operator offers it): the keys' fingerprints, and how to connect. */
  ssh: SshView;
}

export interface SshView {
  enabled: boolean;
  keys: { fingerprint: string; type: string; comment: string; added_at: number }[];
  /** The WebSocket tunnel (relative to the sandbox's route) `agent-sandbox ssh connect` opens. */
  tunnel: string;
}

/** `offered`: false where the operator turned SSH off (SANDBOX_SSH=false) or cannot offer it (TEE): keys kept, SSH off. */
export function sshView(r: SandboxRecord, offered = true): SshView {
  const keys = (r.sshKeys ?? []).map((k) => ({
    fingerprint: k.fingerprint,
    type: k.type,
    comment: k.comment,
    added_at: k.addedAt,
  }));
  return { enabled: offered && keys.length > 0, keys, tunnel: 'ssh/tunnel' };
}

/** When each timer fires (epoch ms), as the reaper decides it (sandbox/reaper.ts); null: not now. */
export function timerDeadlines(r: SandboxRecord): SandboxView['timer_deadlines'] {
  const none = { idle_stop_at: null, max_lifetime_stop_at: null, delete_at: null };
  if (r.expiryExempt) return none;
  if (r.state === 'running') {
    return {
      ...none,
      idle_stop_at: r.lastActivityAt + r.timers.idleTimeoutSeconds * 1000,
      max_lifetime_stop_at: r.startedAt === null ? null : r.startedAt + r.timers.maxLifetimeSeconds * 1000,
    };
  }
  const after = r.timers.deleteAfterStoppedSeconds;
  if (r.state === 'stopped' && after !== undefined && r.stoppedAt !== null) {
    return { ...none, delete_at: r.stoppedAt + after * 1000 };
  }
  return none;
}

export function sandboxView(
  r: SandboxRecord,
  role: 'owner' | 'member' = 'owner',
  sshOffered = true,
): SandboxView {
  // The ports the sandbox exposes, each with its proxy path under the sandbox's API route.
  const ports: Record<string, { proxy: string }> = {};
  for (const p of r.exposedPorts ?? []) ports[String(p)] = { proxy: `port/${p}/` };
  return {
    id: r.id,
    name: r.name,
    owner: r.owner.toLowerCase(),
    state: r.state,
    resources: { ...r.resources },
    timers: { ...r.timers },
    ports,
    tier: r.tier ?? null,
    created_at: r.createdAt,
    last_activity_at: r.lastActivityAt,
    started_at: r.startedAt ?? null,
    stopped_at: r.stoppedAt ?? null,
    stop_reason: r.stopReason ?? null,
    timer_deadlines: timerDeadlines(r),
    agent: r.agent !== false,
    runtime: runtimeOf(r),
    image: r.image,
    sidecar: r.mountedSidecar ? 'mounted' : 'image',
    snapshot_id: role === 'owner' ? (r.snapshotImageId ?? null) : null,
    source: !r.source
      ? null
      : r.source.kind === 'sandbox'
        ? { kind: 'sandbox', sandbox_id: r.source.sandboxId }
        : { kind: 'snapshot', sandbox_id: r.source.sandboxId, snapshot_id: r.source.snapshotId },
    network: r.network
      ? {
          mode: r.network.mode,
          allow_domains: [...r.network.allowDomains],
          include_implicit_domains: r.network.includeImplicitDomains,
        }
      : null,
    role,
    members: [...(r.members ?? [])],
    secret_names: role === 'owner' ? Object.keys(r.userEnv ?? {}).sort() : [],
    ssh: sshView(r, sshOffered),
  };
}
