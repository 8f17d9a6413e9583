// The blueprint layer's one error type: a stable code and a message that says what to do.
import { BaseError } from '@agent-sandbox/errors';

export const BlueprintErrorCodes = [
  /** A job's request is invalid (bad JSON, too long, unknown field value). */
  'INVALID_REQUEST',
  /** Requested resources exceed this operator's caps. */
  'RESOURCES_EXCEED_LIMIT',
  /** A per-sandbox network policy, which this operator does not enforce yet. */
  'NETWORK_POLICY_UNAVAILABLE',
  /** The image is not on this operator's allow-list. */
  'IMAGE_NOT_ALLOWED',
  /** The request needs a TEE and this operator has none. */
  'TEE_UNAVAILABLE',
  /** The sandbox (or workflow) is not known to this operator. */
  'NOT_FOUND',
  /** The job's caller may not act on this sandbox. */
  'FORBIDDEN',
  /** A chain read the handler depends on failed (after retries). */
  'CHAIN',
  /** The runtime refused or failed the operation. */
  'RUNTIME',
  /** The create's reserved slot was released (expired, given up, service ended) before it ran. */
  'EXPIRED',
] as const;

export type BlueprintErrorCode = (typeof BlueprintErrorCodes)[number];

export class BlueprintError extends BaseError<BlueprintErrorCode> {
  override readonly name = 'BlueprintError';
}

export function isBlueprintError(e: unknown, code?: BlueprintErrorCode): e is BlueprintError {
  return e instanceof BlueprintError && (code === undefined || e.code === code);
}
