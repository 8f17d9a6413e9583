// The sandbox runtime's configuration: one validated object passed into SandboxManager, with the
// defaults of the operator's config table, and a reader for the SANDBOX_* environment variables.
import { z } from 'zod';
import { EGRESS_POLICIES } from '../docker/sandbox-network.ts';
import { MAX_SOCKET_PATH, SOCKET_NAME } from '../docker/sidecar-socket.ts';
import { RuntimeError } from '../errors.ts';
import { SnapshotS3ConfigSchema, snapshotS3FromEnv } from '../snapshot-store/config.ts';
import { DEFAULT_IMPLICIT_DOMAINS, DomainSchema } from './network-policy.ts';
import { parseRuntimeList, refuseRuntimeConfig, SandboxRuntimeSchema } from './runtimes.ts';
import { checkShapeCatalog, clampShape, parseShapeList, type ShapeCatalog, ShapeSchema } from './shapes.ts';

// <dir>/sbx-<32 hex>/sidecar.sock must fit MAX_SOCKET_PATH.
const MAX_SOCKET_DIR = MAX_SOCKET_PATH - '/sbx-00000000000000000000000000000000/'.length - SOCKET_NAME.length;

export const SandboxRuntimeConfigSchema = z.object({
  /** Labels this operator's containers; reconcile only ever touches containers carrying it. */
  operatorId: z.string().min(1).default('default'),
  /** Image used when a create names none. */
  image: z.string().min(1),
  /** Sidecar port inside the container. */
  sidecarPort: z.number().int().min(1).max(65535).default(8080),
  /** Host the sidecar URL names (ports are only ever published on 127.0.0.1). */
  publicHost: z.string().default('127.0.0.1'),
  defaultCpuCores: z.number().positive().default(1),
  defaultMemoryMb: z.number().int().positive().default(1024),
  defaultDiskGb: z.number().int().positive().default(10),
  maxCpuCores: z.number().positive().default(2),
  maxMemoryMb: z.number().int().positive().default(8192),
  maxDiskGb: z.number().int().positive().default(50),
  /**
   * Named size presets (empty: one preset, `default`, of defaultCpuCores/MemoryMb/DiskGb). When
   * set, the default preset clamped to the max* ceiling replaces the default* values.
   */
  shapes: z.record(z.string(), ShapeSchema).default({}),
  /** The preset a create that names no size gets (default: the first of `shapes`). */
  defaultShape: z.string().optional(),
  /** Seconds a stopped sandbox is kept before it is deleted, when its create names none (30 days). */
  defaultDeleteAfterStoppedSeconds: z
    .number()
    .int()
    .positive()
    .default(30 * 86400),
  /** Cap on a requested deleteAfterStoppedSeconds (clamped). */
  maxDeleteAfterStoppedSeconds: z
    .number()
    .int()
    .positive()
    .default(90 * 86400),
  /** Below this the sidecar (a Node process) cannot run reliably. */
  minMemoryMb: z.number().int().positive().default(128),
  pidsLimit: z.number().int().positive().default(1024),
  tmpfsSizeMb: z.number().int().positive().default(256),
  /**
   * Host memory budget (MB) for the memory limits of all live sandboxes together; 0 = the host's
   * memory less max(1 GiB, 10 %) (memory-budget.ts). Past it a create fails MEMORY_BUDGET_EXCEEDED.
   */
  memoryBudgetMb: z.number().int().min(0).default(0),
  /** Upper bound on concurrently live (running or provisioning) sandboxes; 0 = unlimited. */
  maxSandboxes: z.number().int().min(0).default(0),
  /**
   * Warm pool: this many containers of the default shape (image, cpu, memory, disk, exposed ports)
   * kept started and healthy for creates to claim; 0 = off. Never more than maxSandboxes leaves.
   */
  warmPool: z.number().int().min(0).max(64).default(0),
  /** How often the pooled containers' health is checked (failures are replaced). */
  warmPoolCheckSeconds: z.number().positive().default(10),
  defaultIdleTimeoutSeconds: z.number().int().positive().default(1800),
  defaultMaxLifetimeSeconds: z.number().int().positive().default(86400),
  maxIdleTimeoutSeconds: z.number().int().positive().default(7200),
  maxMaxLifetimeSeconds: z.number().int().positive().default(172800),
  reaperIntervalSeconds: z.number().positive().default(30),
  gcIntervalSeconds: z.number().positive().default(3600),
  gcHotRetentionSeconds: z.number().min(0).default(86400),
  gcWarmRetentionSeconds: z.number().min(0).default(172800),
  gcColdRetentionSeconds: z.number().min(0).default(604800),
  /** Commit the container and archive the workspace on every stop (a snapshot to fall back on). */
  snapshotAutoCommit: z.boolean().default(true),
  /** Most snapshot storage one sandbox may hold (layer + workspace.tar + image.tar), bytes. */
  snapshotMaxBytes: z
    .number()
    .int()
    .positive()
    .default(20 * 1024 ** 3),
  /** Operator-wide budget for all sandboxes' snapshot storage, bytes. */
  storageBudgetBytes: z
    .number()
    .int()
    .positive()
    .default(100 * 1024 ** 3),
  /**
   * How a workspace is held to its disk_gb: `loop` = an ext4 loop disk per workspace volume
   * (docker/loop-disk.ts; needs root), `none` = not limited (recorded in the sandbox view).
   */
  workspaceDisk: z.enum(['loop', 'none']).default('none'),
  /** Where loop disks live (default: `disks` next to snapshotDir). */
  diskDir: z.string().min(1).optional(),
  /** Where warm/cold archives live (workspace.tar, image.tar per sandbox). */
  snapshotDir: z.string().min(1),
  /**
   * An S3-compatible bucket the cold tier and POST …/snapshot send their archives to, sealed
   * client-side (snapshot-store/). Absent: snapshots stay on local disk.
   */
  snapshotS3: SnapshotS3ConfigSchema.optional(),
  healthTimeoutMs: z.number().int().positive().default(30_000),
  /** First health poll interval; doubles up to healthMaxIntervalMs. */
  healthIntervalMs: z.number().int().positive().default(10),
  healthMaxIntervalMs: z.number().int().positive().default(25),
  stopTimeoutSeconds: z.number().int().min(0).default(5),
  /** Deadline of each short Docker call (inspect, create, start, …); streams are not bounded. */
  engineCallTimeoutMs: z.number().int().positive().default(60_000),
  /** How long a create waits for a lost Docker engine to return (from the loss) before it fails. */
  engineWaitMs: z.number().int().min(0).default(120_000),
  /** Container ports every sandbox publishes (on 127.0.0.1 only) besides those a create asks for. */
  defaultExposedPorts: z.array(z.number().int().min(1).max(65535)).max(8).default([]),
  /**
   * Sandbox network egress: public (internet only; private, CGNAT, link-local, loopback and the
   * host refused), none (no connection out), open (Docker's default bridge, no isolation).
   */
  egress: z.enum(EGRESS_POLICIES).default('public'),
  /**
   * The implicit domains of the network model (registries, git hosts, container registries, CDNs,
   * Tangle's services): what a sandbox with no policy is meant to reach. Published in the
   * capability document; what a `default` network policy reaches (egress-policy/).
   */
  implicitDomains: z.array(DomainSchema).default([...DEFAULT_IMPLICIT_DOMAINS]),
  /**
   * The upstream resolvers of the per-sandbox resolvers (`ip` or `ip#port`): where the names a
   * policy allows are looked up. Empty: the nameservers of the host's /etc/resolv.conf.
   */
  dnsUpstream: z
    .array(
      z.string().regex(/^\d{1,3}(\.\d{1,3}){3}(#\d{1,5})?$/, 'must be an IPv4 address, optionally #port'),
    )
    .default([]),
  /**
   * Under egress none: where each sandbox's sidecar socket directory is made (<dir>/<sandbox id>,
   * 0700). Short enough that the socket path fits a Unix socket address (107 bytes).
   */
  sidecarSocketDir: z
    .string()
    .startsWith('/', 'must be an absolute path')
    .max(
      MAX_SOCKET_DIR,
      `at most ${MAX_SOCKET_DIR} characters, or the socket path is too long for a Unix socket`,
    )
    .default('/run/agent-sandbox'),
  /** The OCI runtime a sandbox runs under when its create names none (runtimes.ts). */
  runtime: SandboxRuntimeSchema.default('runc'),
  /** Further runtimes a create may name (`runtime`); the default is always offered. */
  runtimesAllowed: z.array(SandboxRuntimeSchema).default([]),
  /**
   * Registry images a create may name (SANDBOX_IMAGE_ALLOWLIST: exact references, repositories,
   * `registry/prefix/*`; docker/image-ref.ts). The runtime pulls only what matches.
   */
  imageAllowlist: z.array(z.string()).default([]),
  /** The operator's registry logins by host (never the user's): docker/registry-pull.ts. */
  registryLogins: z.record(z.string(), z.object({ username: z.string(), password: z.string() })).default({}),
  /** Largest registry image (announced download or unpacked), MB; past it the pull is stopped. */
  imageMaxMb: z.number().int().positive().default(10240),
  /** Extra labels on everything created (tests add agent-sandbox.test=1). */
  extraLabels: z.record(z.string(), z.string()).default({}),
});
export type SandboxRuntimeConfig = z.infer<typeof SandboxRuntimeConfigSchema>;
export type SandboxRuntimeConfigInput = z.input<typeof SandboxRuntimeConfigSchema>;

export function parseSandboxRuntimeConfig(input: SandboxRuntimeConfigInput): SandboxRuntimeConfig {
  const r = SandboxRuntimeConfigSchema.safeParse(input);
  if (!r.success) {
    const first = r.error.issues[0];
    throw new RuntimeError(
      'VALIDATION',
      `invalid sandbox runtime config at ${first?.path.join('.') || '(root)'}: ${first?.message}`,
    );
  }
  if (r.data.egress === 'none' && r.data.defaultExposedPorts.length > 0) {
    throw new RuntimeError(
      'VALIDATION',
      'invalid sandbox runtime config: SANDBOX_EGRESS=none gives sandboxes no network, so no port can be exposed; remove SANDBOX_EXPOSED_PORTS or pick another egress policy',
    );
  }
  refuseRuntimeConfig(r.data);
  const shapes = shapeCatalog(r.data);
  // The default preset is what a create naming no size gets: the per-field defaults follow it.
  const d = clampShape(shapes.presets[shapes.defaultPreset]!, shapes.ceiling);
  return { ...r.data, defaultCpuCores: d.cpuCores, defaultMemoryMb: d.memoryMb, defaultDiskGb: d.diskGb };
}

/** The presets, the default preset and the ceiling this configuration offers (GET /api/shapes). */
export function shapeCatalog(cfg: SandboxRuntimeConfig): ShapeCatalog {
  const ceiling = { cpuCores: cfg.maxCpuCores, memoryMb: cfg.maxMemoryMb, diskGb: cfg.maxDiskGb };
  const names = Object.keys(cfg.shapes);
  if (names.length === 0) {
    return {
      presets: {
        default: { cpuCores: cfg.defaultCpuCores, memoryMb: cfg.defaultMemoryMb, diskGb: cfg.defaultDiskGb },
      },
      defaultPreset: 'default',
      ceiling,
    };
  }
  try {
    return checkShapeCatalog({ presets: cfg.shapes, defaultPreset: cfg.defaultShape ?? names[0]!, ceiling });
  } catch (e) {
    throw new RuntimeError('VALIDATION', `invalid sandbox runtime config: ${(e as Error).message}`);
  }
}

// Environment variable -> config key; numbers parsed, booleans "true"/"false".
const ENV_KEYS: Record<string, keyof SandboxRuntimeConfig> = {
  SIDECAR_IMAGE: 'image',
  SIDECAR_HTTP_PORT: 'sidecarPort',
  SIDECAR_PUBLIC_HOST: 'publicHost',
  SANDBOX_DEFAULT_CPU_CORES: 'defaultCpuCores',
  SANDBOX_DEFAULT_MEMORY_MB: 'defaultMemoryMb',
  SANDBOX_DEFAULT_DISK_GB: 'defaultDiskGb',
  SANDBOX_MAX_CPU_CORES: 'maxCpuCores',
  SANDBOX_MAX_MEMORY_MB: 'maxMemoryMb',
  SANDBOX_MAX_DISK_GB: 'maxDiskGb',
  SANDBOX_DEFAULT_SHAPE: 'defaultShape',
  SANDBOX_DEFAULT_DELETE_AFTER_STOPPED: 'defaultDeleteAfterStoppedSeconds',
  SANDBOX_MAX_DELETE_AFTER_STOPPED: 'maxDeleteAfterStoppedSeconds',
  SANDBOX_PIDS_LIMIT: 'pidsLimit',
  OPERATOR_MAX_CAPACITY: 'maxSandboxes',
  SANDBOX_MEMORY_BUDGET_MB: 'memoryBudgetMb',
  SANDBOX_WARM_POOL: 'warmPool',
  SANDBOX_DEFAULT_IDLE_TIMEOUT: 'defaultIdleTimeoutSeconds',
  SANDBOX_DEFAULT_MAX_LIFETIME: 'defaultMaxLifetimeSeconds',
  SANDBOX_MAX_IDLE_TIMEOUT: 'maxIdleTimeoutSeconds',
  SANDBOX_MAX_MAX_LIFETIME: 'maxMaxLifetimeSeconds',
  SANDBOX_REAPER_INTERVAL: 'reaperIntervalSeconds',
  SANDBOX_GC_INTERVAL: 'gcIntervalSeconds',
  SANDBOX_GC_HOT_RETENTION: 'gcHotRetentionSeconds',
  SANDBOX_GC_WARM_RETENTION: 'gcWarmRetentionSeconds',
  SANDBOX_GC_COLD_RETENTION: 'gcColdRetentionSeconds',
  SANDBOX_SNAPSHOT_AUTO_COMMIT: 'snapshotAutoCommit',
  SANDBOX_SNAPSHOT_DIR: 'snapshotDir',
  SANDBOX_HEALTH_TIMEOUT_MS: 'healthTimeoutMs',
  SANDBOX_ENGINE_CALL_TIMEOUT_MS: 'engineCallTimeoutMs',
  SANDBOX_ENGINE_WAIT_MS: 'engineWaitMs',
  SANDBOX_EGRESS: 'egress',
  SANDBOX_SOCKET_DIR: 'sidecarSocketDir',
  SANDBOX_RUNTIME: 'runtime',
  SANDBOX_IMAGE_MAX_MB: 'imageMaxMb',
};

/** Reads SANDBOX_* / SIDECAR_* variables over `base` (e.g. {snapshotDir, operatorId}). */
export function sandboxRuntimeConfigFromEnv(
  env: Record<string, string | undefined>,
  base: Partial<SandboxRuntimeConfigInput> = {},
): SandboxRuntimeConfig {
  const out: Record<string, unknown> = { ...base };
  if (env.SANDBOX_SHAPES?.trim()) out.shapes = parseShapeList(env.SANDBOX_SHAPES);
  const s3 = snapshotS3FromEnv(env);
  if (s3) out.snapshotS3 = s3;
  if (env.SANDBOX_RUNTIMES_ALLOWED?.trim())
    out.runtimesAllowed = parseRuntimeList(env.SANDBOX_RUNTIMES_ALLOWED);
  for (const [envKey, key] of Object.entries(ENV_KEYS)) {
    const raw = env[envKey];
    if (raw === undefined || raw === '') continue;
    const shape = SandboxRuntimeConfigSchema.shape[key];
    const def = shape.def as { innerType?: { def?: { type?: string } }; type?: string };
    const kind = def.innerType?.def?.type ?? def.type;
    if (kind === 'number') {
      const n = Number(raw);
      if (!Number.isFinite(n))
        throw new RuntimeError('VALIDATION', `${envKey} must be a number, got "${raw}"`);
      out[key] = n;
    } else if (kind === 'boolean') {
      if (raw !== 'true' && raw !== 'false') {
        throw new RuntimeError('VALIDATION', `${envKey} must be "true" or "false", got "${raw}"`);
      }
      out[key] = raw === 'true';
    } else {
      out[key] = raw;
    }
  }
  return parseSandboxRuntimeConfig(out as SandboxRuntimeConfigInput);
}
