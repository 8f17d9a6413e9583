// The operator's configuration turned into each part's options: the sandbox manager's config, the
// TEE backend's settings, the API's capabilities and options, the job runner's. Pure mapping, no I/O.

import { join } from 'node:path';
import type { TeeInstanceOptions } from '@agent-sandbox/blueprint-lib';
import type { ApiConfigInput, SandboxRuntimeConfigInput } from '@agent-sandbox/runtime';
import { HARNESS_SUPPORTS } from '@agent-sandbox/sandbox-image';
import type { OperatorKey } from '@agent-sandbox/sdk';
import type { OperatorConfig } from './config.ts';

type Values = OperatorConfig['values'];

/** The sandbox manager's configuration (workspaceDisk resolved by the caller for `auto`). */
export function managerConfig(
  v: Values,
  dataDir: string,
  opts: { operatorId: string; image: string; workspaceDisk: 'loop' | 'none' },
): SandboxRuntimeConfigInput {
  return {
    operatorId: opts.operatorId,
    image: opts.image,
    sidecarPort: v.SIDECAR_HTTP_PORT!,
    publicHost: v.SIDECAR_PUBLIC_HOST!,
    defaultCpuCores: v.SANDBOX_DEFAULT_CPU_CORES!,
    defaultMemoryMb: v.SANDBOX_DEFAULT_MEMORY_MB!,
    defaultDiskGb: v.SANDBOX_DEFAULT_DISK_GB!,
    maxCpuCores: v.SANDBOX_MAX_CPU_CORES!,
    maxMemoryMb: v.SANDBOX_MAX_MEMORY_MB!,
    maxDiskGb: v.SANDBOX_MAX_DISK_GB!,
    shapes: v.SANDBOX_SHAPES ?? {},
    ...(v.SANDBOX_DEFAULT_SHAPE ? { defaultShape: v.SANDBOX_DEFAULT_SHAPE } : {}),
    defaultDeleteAfterStoppedSeconds: v.SANDBOX_DEFAULT_DELETE_AFTER_STOPPED!,
    maxDeleteAfterStoppedSeconds: v.SANDBOX_MAX_DELETE_AFTER_STOPPED!,
    pidsLimit: v.SANDBOX_PIDS_LIMIT!,
    maxSandboxes: v.OPERATOR_MAX_CAPACITY!,
    memoryBudgetMb: v.SANDBOX_MEMORY_BUDGET_MB!,
    warmPool: v.SANDBOX_WARM_POOL!,
    defaultIdleTimeoutSeconds: v.SANDBOX_DEFAULT_IDLE_TIMEOUT!,
    defaultMaxLifetimeSeconds: v.SANDBOX_DEFAULT_MAX_LIFETIME!,
    maxIdleTimeoutSeconds: v.SANDBOX_MAX_IDLE_TIMEOUT!,
    maxMaxLifetimeSeconds: v.SANDBOX_MAX_MAX_LIFETIME!,
    reaperIntervalSeconds: v.SANDBOX_REAPER_INTERVAL!,
    gcIntervalSeconds: v.SANDBOX_GC_INTERVAL!,
    gcHotRetentionSeconds: v.SANDBOX_GC_HOT_RETENTION!,
    gcWarmRetentionSeconds: v.SANDBOX_GC_WARM_RETENTION!,
    gcColdRetentionSeconds: v.SANDBOX_GC_COLD_RETENTION!,
    snapshotAutoCommit: v.SANDBOX_SNAPSHOT_AUTO_COMMIT!,
    snapshotDir: v.SANDBOX_SNAPSHOT_DIR ?? join(dataDir, 'snapshots'),
    workspaceDisk: opts.workspaceDisk,
    diskDir: join(dataDir, 'disks'),
    snapshotMaxBytes: v.SANDBOX_SNAPSHOT_MAX_MB! * 1024 * 1024,
    storageBudgetBytes: v.SANDBOX_STORAGE_BUDGET_MB! * 1024 * 1024,
    healthTimeoutMs: v.SANDBOX_HEALTH_TIMEOUT_MS!,
    engineCallTimeoutMs: v.SANDBOX_ENGINE_CALL_TIMEOUT_MS!,
    engineWaitMs: v.SANDBOX_ENGINE_WAIT_MS!,
    extraLabels: v.SANDBOX_EXTRA_LABELS ?? {},
    defaultExposedPorts: v.SANDBOX_EXPOSED_PORTS ?? [],
    egress: v.SANDBOX_EGRESS!,
    ...(v.SANDBOX_IMPLICIT_DOMAINS?.length ? { implicitDomains: v.SANDBOX_IMPLICIT_DOMAINS } : {}),
    ...(v.SANDBOX_DNS_UPSTREAM?.length ? { dnsUpstream: v.SANDBOX_DNS_UPSTREAM } : {}),
    sidecarSocketDir: v.SANDBOX_SOCKET_DIR!,
    runtime: v.SANDBOX_RUNTIME!,
    runtimesAllowed: v.SANDBOX_RUNTIMES_ALLOWED ?? [],
    imageAllowlist: v.SANDBOX_IMAGE_ALLOWLIST ?? [],
    imageMaxMb: v.SANDBOX_IMAGE_MAX_MB!,
    ...(v.SNAPSHOT_S3_BUCKET ? { snapshotS3: snapshotS3Config(v) } : {}),
  };
}

/** The snapshot object store (SNAPSHOT_S3_*); checked against the allow-list when the manager opens. */
function snapshotS3Config(v: Values): NonNullable<SandboxRuntimeConfigInput['snapshotS3']> {
  return {
    bucket: v.SNAPSHOT_S3_BUCKET!,
    region: v.SNAPSHOT_S3_REGION!,
    prefix: v.SNAPSHOT_S3_PREFIX!,
    forcePathStyle: v.SNAPSHOT_S3_FORCE_PATH_STYLE!,
    allowHttp: v.SNAPSHOT_S3_ALLOW_HTTP!,
    allowPrivateHosts: (v.SNAPSHOT_S3_ALLOW_PRIVATE_HOSTS ?? []).map((h) => h.toLowerCase()),
    ...(v.SNAPSHOT_S3_ENDPOINT ? { endpoint: v.SNAPSHOT_S3_ENDPOINT } : {}),
    ...(v.SNAPSHOT_S3_ACCESS_KEY_ID ? { accessKeyId: v.SNAPSHOT_S3_ACCESS_KEY_ID } : {}),
    ...(v.SNAPSHOT_S3_SECRET_ACCESS_KEY ? { secretAccessKey: v.SNAPSHOT_S3_SECRET_ACCESS_KEY } : {}),
  };
}

/** The TEE backend's settings and measurement policy (everything but the live parts). */
export function teeOptions(
  v: Values,
  testMode: boolean,
): Pick<TeeInstanceOptions, 'settings' | 'expectedMeasurements' | 'requirePinned' | 'acceptedTcbStatuses'> {
  return {
    settings: {
      backend: v.TEE_BACKEND,
      directType: v.TEE_DIRECT_TYPE,
      tsmRoot: v.TEE_TSM_REPORT_ROOT!,
      pccsUrl: v.TEE_PCCS_URL!,
      testAnchorsDir: v.TEE_TEST_ANCHORS_DIR,
      testMode,
      phala: { apiKey: v.PHALA_API_KEY, endpoint: v.PHALA_API_ENDPOINT, image: v.PHALA_SANDBOX_IMAGE },
    },
    expectedMeasurements: v.SANDBOX_TEE_EXPECTED_MEASUREMENTS ?? [],
    requirePinned: v.SANDBOX_TEE_REQUIRE_PINNED_MEASUREMENT ?? true,
    acceptedTcbStatuses: v.TEE_ACCEPTED_TCB_STATUSES ?? ['UpToDate'],
  };
}

/** What `GET /api/capabilities` reports. */
export function capabilities(
  cfg: OperatorConfig,
  key: OperatorKey,
  image: string,
  tee: unknown,
  harnessImage?: string,
): Record<string, unknown> {
  const v = cfg.values;
  return {
    operator: key.address,
    blueprintId: `${cfg.env!.blueprintId}`,
    serviceId: `${cfg.env!.serviceId}`,
    backends: ['docker'],
    tee,
    images: [image, ...(harnessImage ? [harnessImage] : []), ...(v.SANDBOX_IMAGE_ALLOWLIST ?? [])],
    // Which harness CLIs a sandbox can run and which `task` options each honours (the others ignore them).
    agents: {
      harnessImage: harnessImage ?? null,
      harnesses: HARNESS_SUPPORTS,
    },
    limits: {
      maxCpuCores: v.SANDBOX_MAX_CPU_CORES,
      maxMemoryMb: v.SANDBOX_MAX_MEMORY_MB,
      maxDiskGb: v.SANDBOX_MAX_DISK_GB,
      maxSandboxes: v.OPERATOR_MAX_CAPACITY,
    },
  };
}

/** The operator API's HTTP options (CORS, proxies, TLS, agent-run retention). */
export function apiOptions(v: Values): ApiConfigInput {
  return {
    corsAllowedOrigins: v.CORS_ALLOWED_ORIGINS ?? [],
    trustedProxies: v.TRUSTED_PROXIES ?? [],
    tls: v.OPERATOR_API_TLS ?? false,
    ...(v.METRICS_TOKEN ? { metricsToken: v.METRICS_TOKEN } : {}),
    ...(v.PREVIEW_ORIGIN ? { previewOrigin: v.PREVIEW_ORIGIN } : {}),
    ssh: v.SANDBOX_SSH ?? true,
    previewLinks: {
      enabled: v.PREVIEW_LINKS ?? false,
      defaultTtlMs: v.PREVIEW_LINK_TTL! * 1000,
      maxTtlMs: v.PREVIEW_LINK_MAX_TTL! * 1000,
      requestsPerMinute: v.PREVIEW_LINK_RATE_LIMIT!,
    },
    runs: {
      maxEvents: v.RUN_MAX_EVENTS!,
      maxBytes: v.RUN_MAX_BYTES!,
      maxTextChars: v.RUN_MAX_TEXT_CHARS!,
      retentionMs: v.RUN_RETENTION! * 1000,
    },
    workflows: {
      defaultTimeoutMs: v.WORKFLOW_DEFAULT_TIMEOUT! * 1000,
      maxTimeoutMs: v.WORKFLOW_MAX_TIMEOUT! * 1000,
    },
  };
}
