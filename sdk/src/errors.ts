// The SDK's one error type: a stable machine-readable code and a message that says what to do.
import { BaseError } from '@agent-sandbox/errors';

export const SdkErrorCodes = [
  /** The environment is missing or has malformed variables (all of them are listed at once). */
  'CONFIG',
  /** The keystore cannot be read, decrypted, or is not allowed in this mode. */
  'KEYSTORE',
  /** A job's input bytes match neither the flat nor the single-tuple ABI encoding. */
  'JOB_INPUT_DECODE',
  /** A handler's value cannot be ABI-encoded as the job's result tuple. */
  'JOB_RESULT_ENCODE',
  /** A route is declared twice or with an invalid job index. */
  'ROUTER',
  /** The durable job cursor file cannot be read or written. */
  'CURSOR',
  /** An RPC call failed (after retries where the caller retries). */
  'RPC',
  /** A result transaction was rejected for a reason that retrying will not fix. */
  'SUBMIT',
  /** Operator registration failed. */
  'REGISTRATION',
  /** A role tool's transaction (stake, create blueprint, request/approve/reject/terminate) was refused or reverted. */
  'TX',
  /** A service request was rejected, or did not activate in time. */
  'SERVICE_REQUEST',
  /** The runner was used in a state that does not allow the call (e.g. started twice). */
  'RUNNER_STATE',
  /** A blueprint definition the protocol would refuse (each problem named). */
  'DEFINITION',
] as const;

export type SdkErrorCode = (typeof SdkErrorCodes)[number];

export class SdkError extends BaseError<SdkErrorCode> {
  override readonly name = 'SdkError';
}

export function isSdkError(e: unknown, code?: SdkErrorCode): e is SdkError {
  return e instanceof SdkError && (code === undefined || e.code === code);
}
