// The result sender's patient RPC step: retry a call through transient errors, stoppable by a signal.
import type { Logger } from 'pino';
import { Backoff, sleep } from './backoff.ts';
import { FEE_ERROR, messageOf, NONCE_ERROR, revertOf } from './tx-errors.ts';

/** Thrown when the sender stops while a step waits. */
export class Aborted extends Error {}

/** Retries `fn` on errors (except decoded reverts and `okIf` messages, which count as success). */
export async function retryRpc<T>(
  fn: () => Promise<T>,
  signal: AbortSignal,
  log: Logger,
  okIf?: RegExp,
): Promise<T> {
  const backoff = new Backoff(100, 10_000);
  for (;;) {
    if (signal.aborted) throw new Aborted();
    try {
      return await fn();
    } catch (e) {
      if (okIf?.test(messageOf(e))) return undefined as T;
      if (revertOf(e) !== undefined) throw e;
      if (NONCE_ERROR.test(messageOf(e)) || FEE_ERROR.test(messageOf(e))) throw e;
      const ms = backoff.next();
      log.warn({ err: e, retryInMs: ms, attempt: backoff.attempt }, 'RPC call failed; retrying');
      await sleep(ms, signal);
    }
  }
}
