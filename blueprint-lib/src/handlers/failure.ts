// What a failure result posts on chain: `{ code, message }` with a stable code and a short text of
// our own. Engine and library messages never go on chain (they can carry host paths, image
// internals or request values); the operator logs them. Only request errors written for the user
// keep their text: the blueprint's own, and the runtime's refused fields (`invalidField`: a field
// and a reason of ours, never a value). Errors are recognised by class, never by name.
import { RuntimeError } from '@agent-sandbox/runtime';
import { SdkError } from '@agent-sandbox/sdk';
import { BlueprintError } from '../errors.ts';

const MAX_MESSAGE = 200;

/** Our text for each runtime failure code a job can meet; other codes get a generic line. */
const RUNTIME_TEXT: Readonly<Record<string, string>> = {
  VALIDATION: 'the runtime refused the request; check its fields against the operator’s limits',
  RESOURCES_EXCEED_LIMIT: 'the requested resources exceed this operator’s limits',
  IMAGE_NOT_ALLOWED: 'the image is not on this operator’s allow-list',
  IMAGE_NOT_FOUND: 'the image is not available on this operator; ask which images it serves',
  IMAGE_DIGEST_MISMATCH: 'the image did not arrive with the digest it was named by; nothing was started',
  IMAGE_TOO_LARGE: 'the image is larger than this operator allows (SANDBOX_IMAGE_MAX_MB); pick a smaller one',
  IMAGE_PULL_FAILED:
    'the operator could not pull the image: its registry refused the operator’s login or did not answer; ask the operator, or try again later',
  IMAGE_REFUSED:
    'the image does something a sandbox cannot allow (a VOLUME, a symlink where the sandbox mounts, an /etc/ld.so.preload); use an image without it',
  CAPACITY_EXHAUSTED: 'this operator has no room for another sandbox now; try again later',
  MEMORY_BUDGET_EXCEEDED:
    'this operator’s host memory budget is held by its running sandboxes: ask for less memory_mb, try again later or use another operator',
  NOT_FOUND: 'the sandbox is not known to this operator',
  SANDBOX_NOT_FOUND: 'the sandbox is not known to this operator',
  SANDBOX_STOPPED: 'the sandbox is stopped; resume it first',
  SANDBOX_NOT_RUNNING: 'the sandbox is not running',
  FORBIDDEN: 'the job’s caller may not act on this sandbox',
  CONFLICT: 'the sandbox is busy with another operation; try again',
  SOURCE_NOT_FOUND:
    'from_sandbox / from_snapshot names no sandbox or snapshot of the caller’s on this operator; only your own can be copied',
  SOURCE_UNAVAILABLE:
    'the sandbox or snapshot to copy has no workspace to copy now; resume the sandbox or take a new snapshot',
  DOCKER_ERROR: 'the container engine refused the sandbox; nothing of it was kept',
  ENGINE_UNAVAILABLE:
    'the operator’s container engine does not answer: nothing of the sandbox was kept; try again later or use another operator',
  PROVISION_FAILED: 'the sandbox could not be started; nothing of it was kept',
  HEALTH_CHECK_TIMEOUT: 'the sandbox did not become healthy in time; nothing of it was kept',
  SIDECAR_ERROR: 'the sandbox’s agent server failed the request',
  SIDECAR_TIMEOUT: 'the sandbox’s agent server did not answer in time',
  CIRCUIT_OPEN: 'the sandbox’s agent server is failing; try again later',
  STORE_FULL:
    'the operator’s disk is full: nothing of the sandbox was kept; try again later or use another operator',
};

/** The runtime's request fields under the job's names (`SandboxCreateRequest`). */
const JOB_FIELD: Readonly<Record<string, string>> = {
  env: 'env_json',
  metadata: 'metadata_json',
  exposedPorts: 'metadata_json.ports',
  cpuCores: 'cpu_cores',
  memoryMb: 'memory_mb',
  diskGb: 'disk_gb',
  idleTimeoutSeconds: 'idle_timeout_seconds',
  maxLifetimeSeconds: 'max_lifetime_seconds',
  fromSandbox: 'capabilities_json.from_sandbox',
  fromSnapshot: 'capabilities_json.from_snapshot',
};

/** `field: reason` of a runtime field refusal, in the job's field names; else undefined. */
function refusedField(e: RuntimeError): string | undefined {
  const d = e.details;
  if (e.code !== 'VALIDATION' || typeof d?.field !== 'string' || typeof d.reason !== 'string')
    return undefined;
  const [root = '', ...rest] = d.field.split('.');
  return short(`${[JOB_FIELD[root] ?? root, ...rest].join('.')}: ${d.reason}`);
}

const INTERNAL = { code: 'INTERNAL', message: 'the operator failed unexpectedly; its logs have the details' };

const codeOf = (e: unknown): string | undefined => {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === 'string' && /^[A-Z][A-Z0-9_]{1,40}$/.test(c) ? c : undefined;
};

const short = (s: string) => (s.length <= MAX_MESSAGE ? s : `${s.slice(0, MAX_MESSAGE - 1)}…`);

/** `{ code, message }` of a failure, safe to publish. */
export function describeFailure(e: unknown): { code: string; message: string } {
  if (!(e instanceof Error)) return INTERNAL;
  const code = codeOf(e);
  if (!code) return INTERNAL;
  // The blueprint's own errors describe the request (limits, fields, ownership) in our words.
  if (e instanceof BlueprintError && code !== 'CHAIN' && code !== 'RUNTIME') {
    return { code, message: short(e.message) };
  }
  if (e instanceof BlueprintError) {
    return {
      code,
      message:
        code === 'CHAIN'
          ? 'the operator could not read the chain; it will not act until it can'
          : 'the operator’s runtime failed the job; its logs have the details',
    };
  }
  if (e instanceof RuntimeError || e instanceof SdkError) {
    const field = e instanceof RuntimeError ? refusedField(e) : undefined;
    if (field) return { code, message: field };
    return {
      code,
      message:
        RUNTIME_TEXT[code] ?? `the operator could not complete the job (${code}); its logs have the details`,
    };
  }
  return INTERNAL;
}
