// The one error type of the sidecar package (server and image builder): stable code, HTTP status, actionable message.
import { BaseError } from '@agent-sandbox/errors';

export type SidecarErrorCode =
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'INVALID_JSON'
  | 'INVALID_REQUEST'
  | 'INVALID_COMMAND'
  | 'INVALID_CWD'
  | 'INVALID_ENV'
  | 'PAYLOAD_TOO_LARGE'
  | 'SESSION_NOT_FOUND'
  | 'SESSION_NOT_RUNNING'
  | 'TOO_MANY_SESSIONS'
  | 'PATH_OUTSIDE_WORKSPACE'
  | 'FILE_NOT_FOUND'
  | 'FILE_TOO_LARGE'
  | 'NOT_A_FILE'
  | 'AGENT_EXECUTION_FAILED'
  | 'AGENT_CREDENTIALS_MISSING'
  | 'SPAWN_FAILED'
  | 'TEE_UNAVAILABLE'
  | 'INTERNAL'
  // image builder
  | 'NO_DEBIAN_MIRROR'
  | 'DEBOOTSTRAP_FAILED'
  | 'IMAGE_BUILD_FAILED'
  | 'NOT_ROOT';

export class SidecarError extends BaseError<SidecarErrorCode> {
  override readonly name = 'SidecarError';
  readonly status: number;
  constructor(code: SidecarErrorCode, message: string, status = 500, options?: { cause?: unknown }) {
    super(code, message, options);
    this.status = status;
  }
}

/** The JSON error body every route answers with. */
export function errorBody(
  code: string,
  message: string,
): {
  success: false;
  error: { code: string; message: string };
} {
  return { success: false, error: { code, message } };
}
