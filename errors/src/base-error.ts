// The common shape of every error this project throws: a stable machine-readable `code`, a short
// message that says what to do, public `details` (never secrets), the `cause`, and `walk()` to
// find an error down the cause chain (modelled on viem's BaseError; written here, not copied).

export interface BaseErrorOptions {
  cause?: unknown;
  /** Public facts about the failure (never secrets), e.g. the list of bad variables. */
  details?: Record<string, unknown>;
}

export abstract class BaseError<Code extends string = string> extends Error {
  readonly code: Code;
  readonly details: Record<string, unknown> | undefined;
  /** The short message, without anything a subclass appends. */
  readonly shortMessage: string;

  constructor(code: Code, message: string, options: BaseErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.shortMessage = message;
    this.details = options.details;
  }

  /**
   * Walks the cause chain starting at this error: the first error `fn` accepts, or (without `fn`)
   * the deepest cause. Stops on cycles.
   */
  walk(fn?: (e: unknown) => boolean): unknown {
    return walkCauses(this, fn);
  }
}

/** `walk` for any thrown value (not only our errors). */
export function walkCauses(e: unknown, fn?: (e: unknown) => boolean): unknown {
  const seen = new Set<unknown>();
  let cur: unknown = e;
  let last: unknown = e;
  while (cur !== undefined && cur !== null && !seen.has(cur)) {
    if (fn?.(cur)) return cur;
    seen.add(cur);
    last = cur;
    cur = (cur as { cause?: unknown }).cause;
  }
  return fn ? undefined : last;
}

/** Whether `e` is one of our errors, optionally with the given code. */
export function isBaseError(e: unknown, code?: string): e is BaseError {
  return e instanceof BaseError && (code === undefined || e.code === code);
}
