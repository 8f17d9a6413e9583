// The result sender's patient RPC steps: retry a call through transient errors, wait for a
// receipt (re-sending the same signed bytes if a mempool dropped them), both stoppable by a signal.
import type { Logger } from 'pino';
import type { PublicClient, TransactionReceipt } from 'viem';
import { Backoff, sleep } from './backoff.ts';
import type { PendingResultTx } from './job-cursor.ts';
import { FEE_ERROR, messageOf, NONCE_ERROR, revertOf } from './tx-errors.ts';

/** Thrown when the sender stops while a step waits. */
export class Aborted extends Error {}

/** Polls for `tx`'s receipt, fast at first; after 30 s without one, re-sends the same bytes. */
export async function waitForReceipt(
  client: PublicClient,
  tx: PendingResultTx,
  signal: AbortSignal,
): Promise<TransactionReceipt> {
  // Start fast: on a dev chain (instant mining) the receipt exists within milliseconds.
  let delay = 5;
  let lastSend = Date.now();
  for (;;) {
    if (signal.aborted) throw new Aborted();
    const r = await client.getTransactionReceipt({ hash: tx.hash }).catch(() => undefined);
    if (r) return r;
    await sleep(delay, signal);
    delay = Math.min(1000, Math.ceil(delay * 1.5));
    if (Date.now() - lastSend > 30_000) {
      lastSend = Date.now(); // dropped from a mempool? the same bytes are safe to re-send
      await client.sendRawTransaction({ serializedTransaction: tx.raw }).catch(() => {});
    }
  }
}

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
