// The create request: its schema, and how resources and timers are resolved against the
// operator's defaults and caps (0 or absent = default; resources above a cap are refused,
// timers above a cap are clamped).
import { z } from 'zod';
import { invalidField, RuntimeError } from '../errors.ts';
import type { SandboxRuntimeConfig } from './config.ts';
import { parseUserEnv } from './env.ts';
import type { SandboxTimers } from './record.ts';

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
  cpuCores: z.number().nonnegative().default(0),
  memoryMb: z.number().int().nonnegative().default(0),
  diskGb: z.number().int().nonnegative().default(0),
  idleTimeoutSeconds: z.number().int().nonnegative().default(0),
  maxLifetimeSeconds: z.number().int().nonnegative().default(0),
  /** Phase-1 base config: non-secret. */
  env: z.record(z.string(), z.string()).default({}),
  metadata: z.record(z.string(), z.unknown()).default({}),
  /** Container ports to publish on 127.0.0.1 (reached through the API's port proxy). */
  exposedPorts: z.array(z.number().int().min(1).max(65535)).max(MAX_EXPOSED_PORTS).optional(),
  /** Never stopped by the idle/lifetime timers nor demoted by GC (an instance's sandbox). */
  expiryExempt: z.boolean().default(false),
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
  const cpuCores = p.cpuCores || cfg.defaultCpuCores;
  const memoryMb = p.memoryMb || cfg.defaultMemoryMb;
  const diskGb = p.diskGb || cfg.defaultDiskGb;
  const over: string[] = [];
  if (cpuCores > cfg.maxCpuCores) over.push(`cpu_cores ${cpuCores} > ${cfg.maxCpuCores}`);
  if (memoryMb > cfg.maxMemoryMb) over.push(`memory_mb ${memoryMb} > ${cfg.maxMemoryMb}`);
  if (diskGb > cfg.maxDiskGb) over.push(`disk_gb ${diskGb} > ${cfg.maxDiskGb}`);
  if (over.length > 0) {
    throw new RuntimeError(
      'RESOURCES_EXCEED_LIMIT',
      `requested resources exceed this operator's limits (${over.join(', ')}); ask for less`,
      { details: { maxCpuCores: cfg.maxCpuCores, maxMemoryMb: cfg.maxMemoryMb, maxDiskGb: cfg.maxDiskGb } },
    );
  }
  if (memoryMb < cfg.minMemoryMb) {
    throw invalidField(
      'memoryMb',
      `${memoryMb} is below the ${cfg.minMemoryMb} MB a sandbox needs to run its sidecar`,
      `memory_mb ${memoryMb} is below the ${cfg.minMemoryMb} MB a sandbox needs to run its sidecar`,
    );
  }
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
    baseEnv: parseUserEnv(p.env, 'env'),
    metadata: p.metadata,
    exposedPorts: resolveExposedPorts(p.exposedPorts ?? [], cfg),
    expiryExempt: p.expiryExempt,
  };
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
  p: { idleTimeoutSeconds?: number; maxLifetimeSeconds?: number },
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
  };
}
