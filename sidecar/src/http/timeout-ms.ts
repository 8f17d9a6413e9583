// The wire name of a run's time limit: `timeout_ms` (milliseconds), read once here into `timeoutMs`.
// `timeout` is the name operators released before the rename still send; it is accepted for one
// version (when both are present, `timeout_ms` wins) and then removed.
import * as z from '../schema.ts';

const ms = z.optional(z.int().check(z.positive(), z.maximum(86_400_000)));

/** Spread into a request body's schema. */
export const timeoutFields = { timeout_ms: ms, timeout: ms };

/** The body's time limit in milliseconds, or undefined for the route's default. */
export function timeoutMsOf(body: {
  timeout_ms?: number | undefined;
  timeout?: number | undefined;
}): number | undefined {
  return body.timeout_ms ?? body.timeout;
}
