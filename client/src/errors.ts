// The client layer's one error type: a stable code, the operator's status/request id when the
// error came from the API, a message that says what to do, and the CLI exit code it maps to.
import { BaseError } from '@agent-sandbox/errors';

/** Exit codes a script can rely on (documented in client/README.md). */
export const ExitCode = {
  OK: 0,
  USAGE: 1,
  AUTH: 2,
  NOT_FOUND: 3,
  CONFLICT: 4,
  REMOTE: 5,
  CHAIN: 6,
  /** `exec` only: the command ran and exited non-zero. */
  COMMAND_FAILED: 7,
  /** `tee verify` / `secrets set --sealed`: the attestation did not verify (nothing was sent). */
  ATTESTATION: 8,
  INTERRUPTED: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * Codes the client raises itself. Errors relayed from the operator API keep the API's own code
 * (e.g. `CHAT_RUN_ACTIVE`, `CIRCUIT_OPEN`), so `code` is any string.
 */
export type ClientErrorCode =
  | 'USAGE'
  | 'VALIDATION'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'SANDBOX_NOT_RUNNING'
  | 'CONFLICT'
  | 'REMOTE'
  | 'NETWORK'
  | 'BAD_RESPONSE'
  | 'TIMEOUT'
  | 'PROVISION_FAILED'
  | 'CHAIN'
  | 'INTERRUPTED'
  | 'ATTESTATION'
  | (string & {});

export interface ClientErrorOptions {
  status?: number;
  requestId?: string;
  /** Extra public facts, e.g. `retry_after_ms`, `phase`; never secrets. */
  details?: Record<string, unknown>;
  cause?: unknown;
  exitCode?: ExitCode;
}

export class ClientError extends BaseError<ClientErrorCode> {
  override readonly name = 'ClientError';
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  readonly exitCode: ExitCode;

  constructor(code: ClientErrorCode, message: string, options: ClientErrorOptions = {}) {
    super(code, message, options);
    this.status = options.status;
    this.requestId = options.requestId;
    this.exitCode = options.exitCode ?? exitCodeFor(code, options.status);
  }

  /** The machine-readable form the CLI prints with `--json`. */
  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      message: this.message,
      ...(this.status === undefined ? {} : { status: this.status }),
      ...(this.requestId === undefined ? {} : { request_id: this.requestId }),
      ...(this.details === undefined ? {} : { details: this.details }),
      exit_code: this.exitCode,
    };
  }
}

export function isClientError(e: unknown, code?: ClientErrorCode): e is ClientError {
  return e instanceof ClientError && (code === undefined || e.code === code);
}

const byCode: Record<string, ExitCode> = {
  USAGE: ExitCode.USAGE,
  VALIDATION: ExitCode.USAGE,
  UNAUTHORIZED: ExitCode.AUTH,
  FORBIDDEN: ExitCode.AUTH,
  NOT_FOUND: ExitCode.NOT_FOUND,
  SANDBOX_NOT_FOUND: ExitCode.NOT_FOUND,
  SESSION_NOT_FOUND: ExitCode.NOT_FOUND,
  SANDBOX_NOT_RUNNING: ExitCode.CONFLICT,
  SANDBOX_STOPPED: ExitCode.CONFLICT,
  CHAT_RUN_ACTIVE: ExitCode.CONFLICT,
  CONFLICT: ExitCode.CONFLICT,
  PROVISION_FAILED: ExitCode.REMOTE,
  CHAIN: ExitCode.CHAIN,
  INTERRUPTED: ExitCode.INTERRUPTED,
};

/** Code first (it is the stable part), then the HTTP status class, else a remote failure. */
export function exitCodeFor(code: string, status?: number): ExitCode {
  const known = byCode[code];
  if (known !== undefined) return known;
  if (status === 400 || status === 413 || status === 422) return ExitCode.USAGE;
  if (status === 401 || status === 403) return ExitCode.AUTH;
  if (status === 404) return ExitCode.NOT_FOUND;
  if (status === 409) return ExitCode.CONFLICT;
  return ExitCode.REMOTE;
}

/** What to do about an API error, by its stable code; appended to the operator's own message. */
export function hintFor(code: string, details?: Record<string, unknown>): string | undefined {
  const retry =
    typeof details?.retry_after_ms === 'number' ? Math.ceil(details.retry_after_ms / 1000) : undefined;
  switch (code) {
    case 'UNAUTHORIZED':
      return 'sign in again with `agent-sandbox login`';
    case 'FORBIDDEN':
      return 'this sandbox belongs to another wallet (or the session is scoped to another sandbox); sign in with the owner’s key';
    case 'SANDBOX_STOPPED':
    case 'SANDBOX_NOT_RUNNING':
      return 'resume it first with `agent-sandbox resume <id>`';
    case 'CHAT_RUN_ACTIVE':
      return 'wait for the active run to finish or cancel it';
    case 'RATE_LIMITED':
      return `slow down and retry${retry === undefined ? ' later' : ` in ${retry} s`}`;
    case 'CIRCUIT_OPEN':
      return `the sandbox's sidecar is failing; retry${retry === undefined ? ' shortly' : ` in ${retry} s`}`;
    case 'SIDECAR_TIMEOUT':
      return 'the sandbox did not answer in time; retry, or use a shorter command';
    default:
      return undefined;
  }
}
