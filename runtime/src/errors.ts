// The runtime layer's one error type: a stable code, the HTTP status it maps to, and a message
// that says what to do. Causes stay server-side (logged), never in a response.
import { BaseError } from '@agent-sandbox/errors';

export const RuntimeErrorCodes = {
  VALIDATION: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  SANDBOX_NOT_FOUND: 404,
  SESSION_NOT_FOUND: 404,
  CONFLICT: 409,
  /**
   * A create's fromSandbox / fromSnapshot names no sandbox or snapshot of the caller's (another
   * owner's gets the same answer as one that does not exist).
   */
  SOURCE_NOT_FOUND: 404,
  /** The caller's fork source has no workspace to copy now (e.g. still provisioning, or failed). */
  SOURCE_UNAVAILABLE: 409,
  SANDBOX_STOPPED: 409,
  SANDBOX_NOT_RUNNING: 409,
  CHAT_RUN_ACTIVE: 409,
  /** A prompt or task to a plain-compute sandbox (created with agent: false). */
  AGENT_DISABLED: 409,
  /** An SSH tunnel to a sandbox with no SSH key (SSH is off until the owner adds one). */
  SSH_DISABLED: 409,
  /** SSH is not offered here (SANDBOX_SSH=false, or a TEE sandbox). */
  SSH_UNAVAILABLE: 422,
  /** An idempotency key reused with another request (details: run_id, request_digest). */
  IDEMPOTENCY_CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  RESOURCES_EXCEED_LIMIT: 422,
  /** A create names a per-sandbox network policy, which this operator does not enforce yet. */
  NETWORK_POLICY_UNAVAILABLE: 422,
  IMAGE_NOT_ALLOWED: 422,
  IMAGE_NOT_FOUND: 422,
  /** A pinned image arrived without the digest it was named by. */
  IMAGE_DIGEST_MISMATCH: 422,
  /** An image (announced download or unpacked) above SANDBOX_IMAGE_MAX_MB. */
  IMAGE_TOO_LARGE: 422,
  /** The registry failed or refused the pull (unreachable, the operator's login refused). */
  IMAGE_PULL_FAILED: 502,
  /** A registry image does something a sandbox cannot allow (a VOLUME, a symlinked mount path…). */
  IMAGE_REFUSED: 422,
  INTERNAL: 500,
  SIDECAR_ERROR: 502,
  DOCKER_ERROR: 502,
  /** No Docker engine answers at the operator's socket (stopped, gone, refused). */
  ENGINE_UNAVAILABLE: 503,
  EGRESS_RULES: 500,
  PROVISION_FAILED: 500,
  HEALTH_CHECK_TIMEOUT: 504,
  CAPACITY_EXHAUSTED: 503,
  /** A create would pass the host memory budget (memory-budget.ts, SANDBOX_MEMORY_BUDGET_MB). */
  MEMORY_BUDGET_EXCEEDED: 503,
  /** A snapshot or tier move would pass the per-sandbox cap or the operator's storage budget. */
  STORAGE_LIMIT: 507,
  /** The snapshot object store (SNAPSHOT_S3_*) did not answer or refused; nothing was lost, retry. */
  SNAPSHOT_STORE_UNAVAILABLE: 503,
  /** A snapshot object failed authentication or is missing from the bucket; it was not used. */
  SNAPSHOT_CORRUPT: 500,
  CIRCUIT_OPEN: 503,
  STORE_UNAVAILABLE: 503,
  /** The store's filesystem is full: the write was refused whole; writes resume once there is room. */
  STORE_FULL: 507,
  STORE_KEY_MISMATCH: 500,
  STORE_CORRUPT: 500,
  CONFIG_INVALID: 500,
  SIDECAR_TIMEOUT: 504,
  REQUEST_TIMEOUT: 504,
} as const;

export type RuntimeErrorCode = keyof typeof RuntimeErrorCodes;

export class RuntimeError extends BaseError<RuntimeErrorCode> {
  override readonly name = 'RuntimeError';
  readonly status: number;

  /** `details`: extra public facts for the response (e.g. retry_after_ms); never secrets. */
  constructor(
    code: RuntimeErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(code, message, options);
    this.status = RuntimeErrorCodes[code];
  }
}

/**
 * A request field refused, and why, in our own words: safe to show the user (the API's answer, a
 * job's result on chain). `field` is the request's path (`env.LD_PRELOAD`, `memoryMb`); the reason
 * never holds a value (it may be a secret) nor an engine's or library's text.
 */
export function invalidField(field: string, reason: string, message = `${field}: ${reason}`): RuntimeError {
  return new RuntimeError('VALIDATION', message, { details: { field, reason } });
}

export function isRuntimeError(e: unknown, code?: RuntimeErrorCode): e is RuntimeError {
  return e instanceof RuntimeError && (code === undefined || e.code === code);
}
