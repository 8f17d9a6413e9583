// The create request: its schema, and how resources and timers are resolved against the
// operator's defaults and caps (0 or absent = default; resources above a cap are refused,
// timers above a cap are clamped).

import { z } from 'zod';
import { IMAGE_REF_FORM, parseImageRef } from '../docker/image-ref.ts';
import { invalidField, RuntimeError } from '../errors.ts';
import { type SandboxRuntimeConfig, shapeCatalog } from './config.ts';
import { parseUserEnv } from './env.ts';
import { type NetworkPolicy, resolveNetworkPolicy } from './network-policy.ts';
import { SANDBOX_ID_RE, type SandboxTimers, SNAPSHOT_ID_RE } from './record.ts';
import { checkRegistryImage, isRegistryImage } from './registry-images.ts';
import { refuseUnsupported, resolveRuntime, type SandboxRuntime, SandboxRuntimeSchema } from './runtimes.ts';
import { resolveShape } from './shapes.ts';
import { parseSshKey, type SshKey } from './ssh-keys.ts';

/** The user's own agent program (the sidecar's USER_AGENT_COMMAND_KEY). */
const USER_AGENT_COMMAND = 'SANDBOX_AGENT_COMMAND';

const IdLike = z.union([
  z.string().min(1).max(128),
  z.number().int().nonnegative(),
  z.bigint().nonnegative(),
]);

/** Most extra ports one sandbox publishes (request and operator defaults together). */
export const MAX_EXPOSED_PORTS = 8;

export const CreateSandboxParamsSchema = z.object({
  owner: z.string().min(1).max(256),
  serviceId: IdLike,
  callId: IdLike,
  name: z.string().max(128).default(''),
  image: z.string().max(512).optional(),
  /** A size preset of the operator's (GET /api/shapes); numbers below override its fields. */
  shape: z.string().max(64).optional(),
  cpuCores: z.number().nonnegative().default(0),
  memoryMb: z.number().int().nonnegative().default(0),
  diskGb: z.number().int().nonnegative().default(0),
  idleTimeoutSeconds: z.number().int().nonnegative().default(0),
  maxLifetimeSeconds: z.number().int().nonnegative().default(0),
  /** 0 = the operator's default (30 days); clamped to its cap. */
  deleteAfterStoppedSeconds: z.number().int().nonnegative().default(0),
  /** Phase-1 base config: non-secret. */
  env: z.record(z.string(), z.string()).default({}),
  metadata: z.record(z.string(), z.unknown()).default({}),
  /** Container ports to publish on 127.0.0.1 (reached through the API's port proxy). */
  exposedPorts: z.array(z.number().int().min(1).max(65535)).max(MAX_EXPOSED_PORTS).optional(),
  /** Never stopped by the idle/lifetime timers nor demoted by GC (an instance's sandbox). */
  expiryExempt: z.boolean().default(false),
  /** false: plain compute (no coding agent, no agent program, no startup scripts). */
  agent: z.boolean().default(true),
  /** A per-sandbox network policy (network-policy.ts); absent = none (what SANDBOX_EGRESS allows). */
  network: z.unknown().optional(),
  /**
   * Branch: a sandbox of the same owner whose workspace the new sandbox starts with (a copy; no
   * env, secret or token of it). Only the runtime's own id form is accepted.
   */
  fromSandbox: z.string().regex(SANDBOX_ID_RE, 'must be a sandbox id (sbx- and 32 hex digits)').optional(),
  /** The OCI runtime (runc, runsc = gVisor) when the operator offers it; absent = its default. */
  runtime: SandboxRuntimeSchema.optional(),
  /** SSH on from the start: the owner's public key (ssh-keys.ts); more with POST …/ssh. */
  sshPublicKey: z.string().max(16_384).optional(),
  /** A snapshot of the same owner's (the id POST …/snapshot returned) to start from. */
  fromSnapshot: z
    .string()
    .regex(SNAPSHOT_ID_RE, 'must be a snapshot id (sha256: and 64 lowercase hex digits)')
    .optional(),
});
export type CreateSandboxParams = z.input<typeof CreateSandboxParamsSchema>;

export interface ResolvedCreate {
  owner: string;
  serviceId: string;
  callId: string;
  name: string;
  image: string;
  cpuCores: number;
  memoryMb: number;
  diskGb: number;
  timers: SandboxTimers;
  baseEnv: Record<string, string>;
  metadata: Record<string, unknown>;
  exposedPorts: number[];
  expiryExempt: boolean;
  agent: boolean;
  /** Its own network policy (absent: what SANDBOX_EGRESS allows). */
  network?: NetworkPolicy;
  runtime: SandboxRuntime;
  /** SSH keys it starts with (create's ssh_public_key); absent: SSH off. */
  sshKeys?: SshKey[];
  /** A fork's source as asked (checked against the owner's records by the manager). */
  from?: { kind: 'sandbox'; id: string } | { kind: 'snapshot'; id: string };
  /** The image was named by the request (a fork runs its source's image unless this says otherwise). */
  imageNamed: boolean;
}

/** Everything checked before a single Docker object is created. */
export function resolveCreate(input: unknown, cfg: SandboxRuntimeConfig): ResolvedCreate {
  const r = CreateSandboxParamsSchema.safeParse(input);
  if (!r.success) {
    const i = r.error.issues[0];
    const field = i?.path.join('.') || '(root)';
    throw invalidField(field, i?.message ?? 'invalid', `invalid create request at ${field}: ${i?.message}`);
  }
  const p = r.data;
  if (p.fromSandbox && p.fromSnapshot) {
    throw invalidField(
      'fromSnapshot',
      'names a second source; a sandbox is copied from one sandbox or one snapshot, not both',
    );
  }
  const { cpuCores, memoryMb, diskGb } = resolveShape(p, shapeCatalog(cfg));
  if (memoryMb < cfg.minMemoryMb) {
    throw invalidField(
      'memoryMb',
      `${memoryMb} is below the ${cfg.minMemoryMb} MB a sandbox needs to run its sidecar`,
      `memory_mb ${memoryMb} is below the ${cfg.minMemoryMb} MB a sandbox needs to run its sidecar`,
    );
  }
  const network = resolveNetworkPolicy(p.network, cfg.egress);
  const runtime = resolveRuntime(p.runtime, cfg);
  refuseUnsupported(runtime, cfg);
  const baseEnv = parseUserEnv(p.env, 'env');
  const sshKeys = p.sshPublicKey ? [parseSshKey(p.sshPublicKey, Date.now())] : undefined;
  if (!p.agent) refuseAgentProgram(baseEnv, 'env');
  // Not an image reference at all (e.g. `user:password@registry/…`, credentials of the user's own):
  // refused without echoing it, before the engine is asked about it.
  if (p.image && !parseImageRef(p.image)) {
    throw invalidField(
      'image',
      `is not an image reference: ${IMAGE_REF_FORM}`,
      `image is not an image reference: ${IMAGE_REF_FORM}`,
    );
  }
  // A registry image off the allow-list is refused here, before anything is admitted or pulled.
  if (p.image && isRegistryImage(p.image)) checkRegistryImage({ cfg }, p.image);
  if (cpuCores < 0.1)
    throw invalidField(
      'cpuCores',
      `${cpuCores} is below the minimum of 0.1`,
      `cpu_cores ${cpuCores} is below the minimum of 0.1`,
    );
  return {
    owner: p.owner,
    serviceId: String(p.serviceId),
    callId: String(p.callId),
    name: p.name,
    image: p.image || cfg.image,
    cpuCores,
    memoryMb,
    diskGb,
    timers: resolveTimers(p, cfg),
    baseEnv,
    metadata: p.metadata,
    exposedPorts: resolveExposedPorts(p.exposedPorts ?? [], cfg),
    expiryExempt: p.expiryExempt,
    agent: p.agent,
    ...(network ? { network } : {}),
    runtime,
    ...(sshKeys ? { sshKeys } : {}),
    ...(p.fromSandbox ? { from: { kind: 'sandbox' as const, id: p.fromSandbox } } : {}),
    ...(p.fromSnapshot ? { from: { kind: 'snapshot' as const, id: p.fromSnapshot } } : {}),
    imageNamed: Boolean(p.image),
  };
}

/** Plain compute has no coding agent: the user's agent program (SANDBOX_AGENT_COMMAND) is refused. */
export function refuseAgentProgram(env: Record<string, string>, what: 'env' | 'secrets'): void {
  if (Object.hasOwn(env, USER_AGENT_COMMAND)) {
    throw new RuntimeError(
      'VALIDATION',
      `${what} ${USER_AGENT_COMMAND}: this sandbox is plain compute (agent: false) and runs no coding agent; create it with agent: true to give it one`,
    );
  }
}

// The port errors' text is the API's as it was: the reason alone.
const refusePorts = (why: string) => invalidField('exposedPorts', why, why);

/** The request's ports plus the operator's defaults, de-duplicated and sorted. */
export function resolveExposedPorts(asked: readonly number[], cfg: SandboxRuntimeConfig): number[] {
  const ports = [...new Set([...asked, ...cfg.defaultExposedPorts])].sort((a, b) => a - b);
  if (cfg.egress === 'none' && ports.length > 0) {
    throw refusePorts(
      `this operator runs sandboxes with no network (SANDBOX_EGRESS=none), so port ${ports[0]} cannot be exposed; create the sandbox without exposed ports`,
    );
  }
  if (ports.includes(cfg.sidecarPort)) {
    throw refusePorts(`port ${cfg.sidecarPort} is the sidecar's and cannot be exposed; pick another port`);
  }
  if (ports.length > MAX_EXPOSED_PORTS) {
    throw refusePorts(
      `a sandbox exposes at most ${MAX_EXPOSED_PORTS} ports (asked ${ports.length} with the operator's defaults)`,
    );
  }
  return ports;
}

export function resolveTimers(
  p: { idleTimeoutSeconds?: number; maxLifetimeSeconds?: number; deleteAfterStoppedSeconds?: number },
  cfg: SandboxRuntimeConfig,
): SandboxTimers {
  return {
    idleTimeoutSeconds: Math.min(
      p.idleTimeoutSeconds || cfg.defaultIdleTimeoutSeconds,
      cfg.maxIdleTimeoutSeconds,
    ),
    maxLifetimeSeconds: Math.min(
      p.maxLifetimeSeconds || cfg.defaultMaxLifetimeSeconds,
      cfg.maxMaxLifetimeSeconds,
    ),
    deleteAfterStoppedSeconds: Math.min(
      p.deleteAfterStoppedSeconds || cfg.defaultDeleteAfterStoppedSeconds,
      cfg.maxDeleteAfterStoppedSeconds,
    ),
  };
}
