// The HTTP core of the sidecar client: deadlines, bounded bodies, and error mapping to RuntimeError.
import { RuntimeError, type RuntimeErrorCode } from '../errors.ts';

/** Errors that say the sidecar itself is unhealthy (count against its circuit breaker). */
const unhealthy = new WeakSet<object>();

export function isSidecarHealthFailure(e: unknown): boolean {
  return typeof e === 'object' && e !== null && unhealthy.has(e);
}

export function healthFailure(e: RuntimeError): RuntimeError {
  unhealthy.add(e);
  return e;
}

/** An abort signal that fires after `ms`, joined with the caller's signal; clearable. */
export class Deadline {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  #timedOut = false;
  readonly signal: AbortSignal;

  constructor(ms: number, outer?: AbortSignal) {
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      this.#controller.abort(new Error('sidecar deadline'));
    }, ms);
    this.signal = outer ? AbortSignal.any([outer, this.#controller.signal]) : this.#controller.signal;
  }

  get timedOut(): boolean {
    return this.#timedOut;
  }

  /** Stops the timer (the call can now run as long as it likes, e.g. a terminal stream). */
  clear(): void {
    clearTimeout(this.#timer);
  }

  /** Aborts now (releases the connection when a consumer stops reading). */
  abort(): void {
    clearTimeout(this.#timer);
    this.#controller.abort(new Error('sidecar call closed'));
  }
}

/** Reads a whole body, refusing (and cancelling) past `max` bytes. */
export async function readBounded(body: ReadableStream<Uint8Array> | null, max: number): Promise<Uint8Array> {
  if (!body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel().catch(() => {});
      throw new RuntimeError(
        'SIDECAR_ERROR',
        `the sidecar's response exceeded ${Math.round(max / 1024 / 1024)} MiB; ask for less (e.g. a smaller file)`,
      );
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** The transport failure of a fetch, as a RuntimeError (never with the token or the URL query). */
export function transportError(
  e: unknown,
  ctx: { op: string; timeoutMs: number; deadline: Deadline; callerSignal?: AbortSignal | undefined },
): RuntimeError {
  if (e instanceof RuntimeError) return e;
  if (ctx.deadline.timedOut) {
    return healthFailure(
      new RuntimeError(
        'SIDECAR_TIMEOUT',
        `the sandbox's sidecar did not answer ${ctx.op} within ${Math.round(ctx.timeoutMs / 1000)} s; retry, or raise timeout_ms`,
        { details: { timeout_ms: ctx.timeoutMs } },
      ),
    );
  }
  if (ctx.callerSignal?.aborted) {
    return new RuntimeError('SIDECAR_ERROR', `the ${ctx.op} call was cancelled by the caller`, {
      details: { cancelled: true },
    });
  }
  const code = (e as { cause?: { code?: string } }).cause?.code ?? (e as { code?: string }).code;
  // ENOENT: the Unix socket of a sandbox without a network is not there (never started, or deleted).
  const refused = code === 'ECONNREFUSED' || code === 'ENOENT';
  return healthFailure(
    new RuntimeError(
      'SIDECAR_ERROR',
      refused
        ? "the sandbox's sidecar is not accepting connections; is the sandbox running? (resume it, or retry shortly)"
        : `could not reach the sandbox's sidecar (${code ?? 'network error'}); retry shortly`,
      { cause: e },
    ),
  );
}

/**
 * Maps a non-2xx sidecar answer. Client errors the user caused pass through with the sidecar's
 * message; auth failures mean the operator holds a wrong token, which is the operator's fault
 * (502), never the user's; 5xx other than a failed agent run marks the sidecar unhealthy.
 */
export function statusError(status: number, bodyText: string, redact: (s: string) => string): RuntimeError {
  let code = '';
  let message = '';
  try {
    const body = JSON.parse(bodyText) as { error?: { code?: unknown; message?: unknown } };
    code = typeof body.error?.code === 'string' ? body.error.code : '';
    message = typeof body.error?.message === 'string' ? body.error.message : '';
  } catch {
    // not JSON: fall through with empty code/message
  }
  message = redact(message).slice(0, 500);
  const details = { sidecar_status: status, ...(code ? { sidecar_code: code } : {}) };
  const make = (c: RuntimeErrorCode, m: string) => new RuntimeError(c, m, { details });

  if (status === 401 || (status === 403 && /token/i.test(message) && code === 'FORBIDDEN')) {
    return make(
      'SIDECAR_ERROR',
      "the sandbox's sidecar refused the operator's credentials; recreate the sandbox if this persists",
    );
  }
  if (status === 400 || status === 422)
    return make('VALIDATION', message || 'the sidecar rejected the request');
  if (status === 403) return make('FORBIDDEN', message || 'the sidecar refused access to that resource');
  if (status === 404) {
    if (code === 'SESSION_NOT_FOUND') return make('SESSION_NOT_FOUND', message || 'no such terminal session');
    if (code && code !== 'NOT_FOUND') return make('NOT_FOUND', message || 'not found in the sandbox');
    return make(
      'SIDECAR_ERROR',
      "the sandbox's sidecar does not offer this route; its image may be outdated",
    );
  }
  if (status === 409) return make('CONFLICT', message || 'the sandbox is busy with a conflicting operation');
  if (status === 413) return make('PAYLOAD_TOO_LARGE', message || 'the request is too large for the sidecar');
  if (status === 429) return make('RATE_LIMITED', message || 'the sidecar is at capacity; retry shortly');
  if (status >= 500 && (code === 'AGENT_EXECUTION_FAILED' || code === 'SPAWN_FAILED')) {
    return make('SIDECAR_ERROR', message || 'the agent run failed inside the sandbox');
  }
  if (status >= 500) {
    return healthFailure(make('SIDECAR_ERROR', `the sandbox's sidecar failed (${status}); retry shortly`));
  }
  return make('SIDECAR_ERROR', `unexpected sidecar answer (${status})`);
}
