// What the API shows of a sandbox: an explicit allow-list of record fields (never the sidecar
// token, never env values, never container internals).
import type { SandboxRecord } from '../sandbox/record.ts';

export interface SandboxView {
  id: string;
  name?: string;
  owner: string;
  state: string;
  resources: Record<string, unknown>;
  timers: Record<string, unknown>;
  ports: Record<string, unknown>;
  tier?: string | null;
  created_at: number;
  last_activity_at: number;
  started_at?: number | null;
  stopped_at?: number | null;
  stop_reason?: string | null;
  secret_names: string[];
}

export function sandboxView(r: SandboxRecord): SandboxView {
  const ports = (r.metadata?.ports ?? {}) as Record<string, unknown>;
  return {
    id: r.id,
    name: r.name,
    owner: r.owner.toLowerCase(),
    state: r.state,
    resources: { ...r.resources },
    timers: { ...r.timers },
    ports: typeof ports === 'object' && ports !== null ? { ...ports } : {},
    tier: r.tier ?? null,
    created_at: r.createdAt,
    last_activity_at: r.lastActivityAt,
    started_at: r.startedAt ?? null,
    stopped_at: r.stoppedAt ?? null,
    stop_reason: r.stopReason ?? null,
    secret_names: Object.keys(r.userEnv ?? {}).sort(),
  };
}
