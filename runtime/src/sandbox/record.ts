// The sandbox record: its schema, public states, the allowed transitions between them, and the
// server-side generation of ids and sidecar tokens.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { RuntimeError } from '../errors.ts';
import { NetworkPolicySchema } from './network-policy.ts';
import { SandboxRuntimeSchema } from './runtimes.ts';
import { MAX_SSH_KEYS, SshKeySchema } from './ssh-keys.ts';

export const SANDBOX_STATES = [
  'pending',
  'provisioning',
  'running',
  'stopped',
  'failed',
  'expired',
  'deleted',
] as const;
export const SandboxStateSchema = z.enum(SANDBOX_STATES);
export type SandboxState = z.infer<typeof SandboxStateSchema>;

/**
 * Where a stopped sandbox's state lives. hot: the stopped container and its workspace volume;
 * warm: a committed image plus a tar of the workspace (container and volume removed);
 * cold: `docker save` of that image plus the workspace tar in the snapshot dir (image removed).
 */
export const StorageTierSchema = z.enum(['hot', 'warm', 'cold']);
export type StorageTier = z.infer<typeof StorageTierSchema>;

// Every legal move. `expired` and `deleted` are terminal; `deleted` may be re-entered (delete is
// idempotent), `stopped -> stopped` covers tier demotions, `running -> running` covers a
// container recreate (secret injection) that keeps the sandbox running.
const TRANSITIONS: Record<SandboxState, readonly SandboxState[]> = {
  pending: ['provisioning', 'failed', 'deleted'],
  // provisioning -> pending: a provision cut short by a restart is started over (reconcile).
  provisioning: ['pending', 'running', 'failed', 'deleted'],
  running: ['running', 'stopped', 'failed', 'deleted'],
  stopped: ['stopped', 'provisioning', 'running', 'failed', 'expired', 'deleted'],
  failed: ['deleted', 'failed'],
  expired: ['deleted', 'expired'],
  deleted: ['deleted'],
};

export function canTransition(from: SandboxState, to: SandboxState): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Throws CONFLICT unless `from -> to` is an allowed move. */
export function assertTransition(id: string, from: SandboxState, to: SandboxState): void {
  if (!canTransition(from, to)) {
    throw new RuntimeError('CONFLICT', `sandbox ${id} is ${from} and cannot become ${to}`, {
      details: { state: from, requested: to },
    });
  }
}

export const SandboxResourcesSchema = z.object({
  cpuCores: z.number().positive(),
  memoryMb: z.number().int().positive(),
  diskGb: z.number().int().positive(),
  /** false when the storage driver cannot cap a container's disk (recorded, not hidden). */
  diskEnforced: z.boolean(),
  /**
   * How the workspace (/home/agent) is held to diskGb: `loop-ext4` (its own ext4 loop disk, a
   * write past it fails with "No space left on device") or null (not limited). Absent: older record.
   */
  workspaceDisk: z.enum(['loop-ext4']).nullable().optional(),
});
export type SandboxResources = z.infer<typeof SandboxResourcesSchema>;

export const SandboxTimersSchema = z.object({
  idleTimeoutSeconds: z.number().int().positive(),
  maxLifetimeSeconds: z.number().int().positive(),
  /**
   * A stopped sandbox is deleted (everything removed, state `expired`) this long after its stop;
   * a resume restarts the clock (the next stop sets a new stoppedAt). Absent: an older record,
   * which only GC's retentions remove.
   */
  deleteAfterStoppedSeconds: z.number().int().positive().optional(),
});
export type SandboxTimers = z.infer<typeof SandboxTimersSchema>;

const EnvSchema = z.record(z.string(), z.string());

/** A member wallet: an EVM address, lowercased. */
export const MemberAddressSchema = z.string().regex(/^0x[0-9a-f]{40}$/);
export const MAX_MEMBERS = 64;

/** Sandbox ids and snapshot ids as the runtime makes them: the only forms a fork may name. */
export const SANDBOX_ID_RE = /^sbx-[0-9a-f]{32}$/;
export const SNAPSHOT_ID_RE = /^sha256:[0-9a-f]{64}$/;

/**
 * What a fork was copied from: a sandbox (branch; its workspace as it was at the copy) or one of
 * its snapshots (the workspace archived with that snapshot). Only the workspace is copied: never
 * the env, the secrets or the token.
 */
export const SandboxSourceSchema = z.union([
  z.object({ kind: z.literal('sandbox'), sandboxId: z.string().regex(SANDBOX_ID_RE) }),
  z.object({
    kind: z.literal('snapshot'),
    sandboxId: z.string().regex(SANDBOX_ID_RE),
    snapshotId: z.string().regex(SNAPSHOT_ID_RE),
  }),
]);
export type SandboxSource = z.infer<typeof SandboxSourceSchema>;

export const SandboxRecordSchema = z.object({
  id: z.string().regex(SANDBOX_ID_RE),
  /** Immutable after create; every auth check compares against it. */
  owner: z.string().min(1),
  serviceId: z.string(),
  callId: z.string(),
  operatorId: z.string(),
  name: z.string(),
  state: SandboxStateSchema,
  /** Sidecar bearer token: 32 random bytes, hex. Kept only in the encrypted store. */
  token: z.string().regex(/^[0-9a-f]{64}$/),
  /**
   * The token in the container's config when it is not `token`: a claimed warm-pool container,
   * started with the pool's bootstrap token. Every start of that container rotates it to `token`
   * over PUT /env (env-delivery.ts); null or absent once the container was made for this sandbox.
   */
  containerToken: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable()
    .optional(),
  /** The image the sandbox was asked for (a running resumed sandbox runs from its snapshot). */
  image: z.string(),
  containerId: z.string().nullable(),
  volumeName: z.string(),
  hostPort: z.number().int().nullable(),
  sidecarUrl: z.string().nullable(),
  /** Container ports published on 127.0.0.1 (fixed at create; absent in records from before). */
  exposedPorts: z.array(z.number().int()).optional(),
  /** Container port → engine-chosen loopback host port; refreshed with hostPort on every start. */
  exposedHostPorts: z.record(z.string(), z.number().int()).optional(),
  tier: StorageTierSchema.nullable(),
  snapshotImageId: z.string().nullable(),
  /** Directory holding workspace.tar (warm and cold) and image.tar (cold). */
  snapshotArchiveDir: z.string().nullable(),
  /** Size of the snapshot image's own layer (the container's changes), counted against storage limits. */
  snapshotLayerBytes: z.number().int().nonnegative().nullable().optional(),
  /**
   * The latest snapshot's archives in the object store (SNAPSHOT_S3_*): opaque object names, sealed
   * under the store's key and bound to this sandbox. `imageId` is the snapshot they belong to.
   * Absent or null: none there (local archives only).
   */
  snapshotRemote: z
    .object({
      imageId: z.string().nullable(),
      workspace: z.string().nullable(),
      image: z.string().nullable(),
      bytes: z.number().int().nonnegative(),
    })
    .nullable()
    .optional(),
  /** Objects an upload cut short left in the store (its cleanup failed too): deleted at the next try. */
  snapshotOrphans: z.array(z.string()).optional(),
  resources: SandboxResourcesSchema,
  timers: SandboxTimersSchema,
  /** Non-secret configuration from the create request (phase 1). */
  baseEnv: EnvSchema,
  /** Phase-2 secrets; merged over baseEnv. Only ever persisted through the encrypted store. */
  userEnv: EnvSchema,
  metadata: z.record(z.string(), z.unknown()),
  createdAt: z.number().int(),
  updatedAt: z.number().int(),
  /** Start of the current running interval (create or resume): the max-lifetime clock. */
  startedAt: z.number().int().nullable(),
  lastActivityAt: z.number().int(),
  stoppedAt: z.number().int().nullable(),
  /** When the sandbox entered its current storage tier: the GC retention clock. */
  tierSince: z.number().int().nullable(),
  stopReason: z.enum(['user', 'idle', 'max_lifetime', 'engine']).nullable(),
  /**
   * Exempt from the idle/lifetime reaper and from GC (an instance's one sandbox): it stops only
   * when asked and a stopped one stays hot. Absent: false (cloud sandboxes, older records).
   */
  expiryExempt: z.boolean().optional(),
  /**
   * false: plain compute (create option `agent: false`): no coding agent (prompt and task are
   * refused with AGENT_DISABLED), no agent program in its env. Absent: true.
   */
  agent: z.boolean().optional(),
  /**
   * A registry image (docker/image-ref.ts): pulled at create (then `image` names it by digest) and
   * run with the sidecar mounted from the kit volume (docker/sidecar-kit.ts). Absent: false.
   */
  mountedSidecar: z.boolean().optional(),
  /** The OCI runtime its containers run under (runtimes.ts), fixed at create. Absent: runc. */
  runtime: SandboxRuntimeSchema.optional(),
  /**
   * Team access: wallets (lowercased) the owner lets use the sandbox as themselves (exec, prompt,
   * terminals, files, ports); only the owner manages members and secrets and deletes. Absent: none.
   */
  members: z.array(MemberAddressSchema).max(MAX_MEMBERS).optional(),
  /** A fork's source (create option from_sandbox / from_snapshot). Absent: a fresh sandbox. */
  source: SandboxSourceSchema.optional(),
  /**
   * Its own network policy (create option `network`; enforced by egress-policy/). Absent: none,
   * the sandbox reaches what the operator's SANDBOX_EGRESS allows.
   */
  network: NetworkPolicySchema.optional(),
  /**
   * SSH public keys the owner let in (ssh-keys.ts); SSH is on while there is one. Absent: none.
   */
  sshKeys: z.array(SshKeySchema).max(MAX_SSH_KEYS).optional(),
  error: z.string().nullable(),
});
export type SandboxRecord = z.infer<typeof SandboxRecordSchema>;

/** What the API layer may show: everything except the tokens and the env values. */
export type PublicSandboxView = Omit<SandboxRecord, 'token' | 'containerToken' | 'userEnv' | 'baseEnv'> & {
  userEnvKeys: string[];
  baseEnvKeys: string[];
};

export function publicView(r: SandboxRecord): PublicSandboxView {
  const { token: _t, containerToken: _c, userEnv, baseEnv, ...rest } = r;
  return { ...rest, userEnvKeys: Object.keys(userEnv), baseEnvKeys: Object.keys(baseEnv) };
}

export function newSandboxId(): string {
  return `sbx-${randomBytes(16).toString('hex')}`;
}

export function newSidecarToken(): string {
  return randomBytes(32).toString('hex');
}

/** A state where the sandbox can still be brought back to running. */
/** What a caller chooses for a new sandbox; the rest starts empty (no container, tier, stop or error). */
export type NewRecordFields = Pick<
  SandboxRecord,
  | 'id'
  | 'owner'
  | 'serviceId'
  | 'callId'
  | 'operatorId'
  | 'name'
  | 'state'
  | 'image'
  | 'volumeName'
  | 'exposedPorts'
  | 'resources'
  | 'timers'
  | 'baseEnv'
  | 'metadata'
> &
  Partial<Pick<SandboxRecord, 'expiryExempt' | 'agent' | 'source' | 'network' | 'runtime'>>;

/** A new sandbox's record: a fresh sidecar token, created and last active `now`. */
export function newRecord(f: NewRecordFields, now: number): SandboxRecord {
  return {
    ...f,
    token: newSidecarToken(),
    containerId: null,
    hostPort: null,
    sidecarUrl: null,
    exposedHostPorts: {},
    tier: null,
    snapshotImageId: null,
    snapshotArchiveDir: null,
    userEnv: {},
    createdAt: now,
    updatedAt: now,
    startedAt: null,
    lastActivityAt: now,
    stoppedAt: null,
    tierSince: null,
    stopReason: null,
    error: null,
  };
}

export function isResumable(r: SandboxRecord): boolean {
  return r.state === 'stopped';
}

export function isTerminal(s: SandboxState): boolean {
  return s === 'expired' || s === 'deleted';
}
