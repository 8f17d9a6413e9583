// The API's one error shape: every failure becomes `{error:{code, message, request_id}}` with the
// right status; causes, stack traces and engine/sidecar text stay in the logs.
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { isRuntimeError, RuntimeError } from '../errors.ts';
import type { ApiEnv } from './context.ts';

export interface ErrorBody {
  error: {
    code: string;
    message: string;
    request_id: string;
    retry_after_ms?: number;
    details?: Record<string, unknown>;
  };
}

// 5xx codes whose message is written by our own code for the client (what to do next); every
// other 5xx gets a generic message because its text may carry engine or sidecar internals.
const SAFE_5XX = new Set([
  'CIRCUIT_OPEN',
  'SIDECAR_TIMEOUT',
  'CAPACITY_EXHAUSTED',
  'MEMORY_BUDGET_EXCEEDED',
  'STORE_UNAVAILABLE',
  'REQUEST_TIMEOUT',
]);

const GENERIC_5XX: Record<number, string> = {
  500: 'internal error; the operator logged it under this request id',
  502: 'the sandbox backend failed; retry, or report this request id to the operator',
  503: 'service unavailable; retry later',
  504: 'the operation timed out; retry later',
  507: 'the operator is out of storage for this; retry later, or tell its operator',
};

function fromHttpException(e: HTTPException): RuntimeError {
  switch (e.status) {
    case 400:
      return new RuntimeError(
        'VALIDATION',
        e.message || 'malformed request; send a JSON body that matches the schema',
      );
    case 401:
      return new RuntimeError('UNAUTHORIZED', 'sign in first: send Authorization: Bearer <session token>');
    case 404:
      return new RuntimeError('NOT_FOUND', 'no such route');
    case 413:
      return new RuntimeError('PAYLOAD_TOO_LARGE', 'request body too large');
    case 415:
      return new RuntimeError('VALIDATION', 'send the body as JSON with Content-Type: application/json');
    default:
      return new RuntimeError('INTERNAL', 'internal error', { cause: e });
  }
}

export function toErrorBody(err: RuntimeError, requestId: string): ErrorBody {
  const body: ErrorBody = { error: { code: err.code, message: err.message, request_id: requestId } };
  if (err.status >= 500 && !SAFE_5XX.has(err.code)) {
    body.error.message = GENERIC_5XX[err.status] ?? GENERIC_5XX[500]!;
  }
  const d = err.details ?? {};
  if (typeof d.retry_after_ms === 'number') body.error.retry_after_ms = Math.ceil(d.retry_after_ms);
  if (err.status < 500) {
    const { retry_after_ms: _r, ...rest } = d;
    if (Object.keys(rest).length > 0) body.error.details = rest;
  }
  return body;
}

/** Normalises anything thrown into a RuntimeError (unknown errors become INTERNAL). */
export function asRuntimeError(e: unknown): RuntimeError {
  if (isRuntimeError(e)) return e;
  if (e instanceof HTTPException) return fromHttpException(e);
  return new RuntimeError('INTERNAL', 'internal error', { cause: e });
}

export function errorResponse(c: Context<ApiEnv>, e: unknown): Response {
  const err = asRuntimeError(e);
  const requestId = c.get('requestId') ?? 'unknown';
  const log = c.get('log');
  if (err.status >= 500) {
    // The cause goes to the log only; pino serialises `err` with its stack server-side.
    log?.error({ err: e instanceof Error ? e : String(e), code: err.code }, 'request failed');
  } else {
    log?.info({ code: err.code, status: err.status }, 'request refused');
  }
  const body = toErrorBody(err, requestId);
  // The unread rest of an oversize body would poison a kept-alive connection: close it.
  if (err.code === 'PAYLOAD_TOO_LARGE') c.header('connection', 'close');
  if (body.error.retry_after_ms !== undefined) {
    c.header('retry-after', String(Math.max(1, Math.ceil(body.error.retry_after_ms / 1000))));
  }
  return c.json(body, err.status as ContentfulStatusCode);
}

/** Throws the API's 404 for an unknown route (used as the app's notFound handler). */
export function notFoundResponse(c: Context<ApiEnv>): Response {
  return errorResponse(
    c,
    new RuntimeError('NOT_FOUND', `no route ${c.req.method} ${new URL(c.req.url).pathname}`),
  );
}
