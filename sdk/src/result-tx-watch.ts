// Watches a result transaction (and any fee-bumped replacements at its nonce) until one is mined,
// the nonce is taken by another transaction of the same key, or it is found stuck: dropped from
// the mempool and refused again, or priced below the base fee, or simply not mined for too long.
import { type Hex, type PublicClient, parseTransaction, type TransactionReceipt } from 'viem';
import { sleep } from './backoff.ts';
import type { PendingResultTx } from './job-cursor.ts';
import { Aborted } from './rpc-retry.ts';
import { messageOf, NONCE_ERROR } from './tx-errors.ts';

export type ResultTxFate =
  | { kind: 'mined'; tx: PendingResultTx; receipt: TransactionReceipt }
  /** The account's mined nonce passed ours without any of our txs: ours can never be mined. */
  | { kind: 'nonce-used' }
  /** Not mined after `stuckAfterMs` (or priced below the base fee): replace it with higher fees. */
  | { kind: 'stuck'; reason: 'below-base-fee' | 'dropped' | 'not-mined'; baseFee: bigint | undefined };

export interface WatchOptions {
  client: PublicClient;
  /** The sending account (its mined nonce tells a dropped or replaced tx). */
  address: Hex;
  signal: AbortSignal;
  /** How long a tx may wait in the pool before it counts as stuck (default 30 s). */
  stuckAfterMs: number;
}

/** `txs` all carry the same nonce; the newest (last) is the one re-sent when dropped. */
export async function watchResultTx(txs: PendingResultTx[], o: WatchOptions): Promise<ResultTxFate> {
  const { client, signal } = o;
  const nonce = txs[0]!.nonce;
  const newest = txs[txs.length - 1]!;
  const maxFee = feeOf(newest.raw);
  let delay = 5; // a dev chain mines within milliseconds: start fast
  let since = Date.now();
  let lastNonceCheck = Date.now();
  const receipt = async () => {
    for (const tx of txs) {
      const r = await client.getTransactionReceipt({ hash: tx.hash }).catch(() => undefined);
      if (r) return { kind: 'mined' as const, tx, receipt: r };
    }
    return undefined;
  };
  for (;;) {
    if (signal.aborted) throw new Aborted();
    const mined = await receipt();
    if (mined) return mined;
    await sleep(delay, signal);
    delay = Math.min(1000, Math.ceil(delay * 1.5));
    if (Date.now() - lastNonceCheck < 1000) continue;
    lastNonceCheck = Date.now();
    const [count, head] = await Promise.all([
      client.getTransactionCount({ address: o.address, blockTag: 'latest' }).catch(() => undefined),
      client.getBlock({ blockTag: 'latest' }).catch(() => undefined),
    ]);
    if (count !== undefined && count > nonce) {
      // A receipt may have appeared between the two reads.
      return (await receipt()) ?? { kind: 'nonce-used' };
    }
    const baseFee = head?.baseFeePerGas ?? undefined;
    if (baseFee !== undefined && maxFee !== undefined && maxFee < baseFee) {
      return { kind: 'stuck', reason: 'below-base-fee', baseFee };
    }
    if (Date.now() - since < o.stuckAfterMs) continue;
    since = Date.now();
    const known = await client.getTransaction({ hash: newest.hash }).catch(() => undefined);
    if (known) return { kind: 'stuck', reason: 'not-mined', baseFee };
    // Dropped from the mempool: the same signed bytes are safe to re-send (they can be mined once).
    try {
      await client.sendRawTransaction({ serializedTransaction: newest.raw });
    } catch (e) {
      if (!/already known/i.test(messageOf(e)) && !NONCE_ERROR.test(messageOf(e)))
        return { kind: 'stuck', reason: 'dropped', baseFee };
      // A nonce refusal is settled by the nonce check above on the next round.
    }
  }
}

/** maxFeePerGas of a signed EIP-1559 tx (undefined for another type). */
export function feeOf(raw: Hex): bigint | undefined {
  const t = parseTransaction(raw);
  return t.type === 'eip1559' ? t.maxFeePerGas : undefined;
}
