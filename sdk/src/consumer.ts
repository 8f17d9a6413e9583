// Posts job results to Tangle from the operator's key: one serial sender with local nonces, batches
// of ready results in submitResults, retries on transient errors, and at most one result per call.
import type { Logger } from 'pino';
import {
  type Address,
  type Hex,
  keccak256,
  type LocalAccount,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import { sleep } from './backoff.ts';
import { isSdkError } from './errors.ts';
import type { CallRef, JobCursor, LogPosition, PendingResultTx } from './job-cursor.ts';
import { callStates, estimateResultGas, resultCalldata } from './result-calls.ts';
import { ResultFees } from './result-fees.ts';
import { feeOf, type ResultTxFate, watchResultTx } from './result-tx-watch.ts';
import { Aborted, retryRpc } from './rpc-retry.ts';
import { DONE_ERRORS, FEE_ERROR, messageOf, NONCE_ERROR, revertOf } from './tx-errors.ts';

/** 'vanished': a reorg removed the call before its result was on chain; no result is sent. */
export type SubmitOutcome = 'submitted' | 'already-done' | 'failed' | 'aborted' | 'vanished';

export interface ResultConsumerOptions {
  client: PublicClient;
  account: LocalAccount;
  chainId: number;
  tangle: Address;
  serviceId: bigint;
  cursor: JobCursor;
  log: Logger;
  /** Most results per submitResults transaction (default 16). */
  maxBatch?: number;
  /** Extra gas over the estimate, in percent (default 25). */
  gasHeadroomPct?: number;
  /**
   * Read getJobCall(...).completed before sending (default true). Without it a completed call is
   * still recognised, from the decoded JobAlreadyCompleted revert of the gas estimate.
   */
  precheckCompleted?: boolean;
  /**
   * How long a result tx may sit unmined before it counts as stuck and is re-signed at the same
   * nonce with higher fees (default 30 s); one priced below the base fee is replaced at once.
   */
  stuckAfterMs?: number;
  /** Fee bumps of one stuck result before its calls are given up as failed (default 5). */
  maxFeeBumps?: number;
  /** False for a call a reorg removed (checked before signing and after a reorg): it gets no result. */
  isLive?: (call: CallRef) => boolean;
}

interface Item {
  callId: bigint;
  pos: LogPosition;
  blockHash?: Hex | undefined;
  output: Hex;
  attempts: number;
  settle: (o: SubmitOutcome) => void;
}

export class ResultConsumer {
  readonly #o: ResultConsumerOptions & {
    maxBatch: number;
    gasHeadroomPct: number;
    precheckCompleted: boolean;
    stuckAfterMs: number;
    maxFeeBumps: number;
  };
  readonly #queue: Item[] = [];
  readonly #abort = new AbortController();
  #reorg = new AbortController();
  #loop: Promise<void> | undefined;
  #nonce: number | undefined;
  /** Where the next nonce resync reads: 'latest' when our own stuck tx must be replaced. */
  #nonceTag: 'pending' | 'latest' = 'pending';
  readonly #fees: ResultFees;
  #idle: Array<() => void> = [];
  /** Phase timestamps of the batch being sent (for the log line). */
  #t: Record<string, number> = {};

  constructor(opts: ResultConsumerOptions) {
    this.#o = {
      maxBatch: 16,
      gasHeadroomPct: 25,
      precheckCompleted: true,
      stuckAfterMs: 30_000,
      maxFeeBumps: 5,
      ...opts,
    };
    this.#fees = new ResultFees(opts.client);
  }

  /** Results waiting or being sent. */
  get backlog(): number {
    return this.#queue.length + (this.#loop ? 1 : 0);
  }

  /**
   * Settles signed result transactions left by a previous run (persisted before broadcast): re-sends
   * the same bytes (so each can be mined at most once) and marks their calls done once mined.
   */
  async recover(): Promise<void> {
    const { cursor, client, log } = this.#o;
    for (const tx of cursor.pendingTxs) {
      const calls = tx.calls.map((c) => `${c.callId}`);
      let receipt = await this.#retry(() =>
        client.getTransactionReceipt({ hash: tx.hash }).catch(() => undefined),
      );
      if (!receipt) {
        try {
          await this.#retry(
            () => client.sendRawTransaction({ serializedTransaction: tx.raw }),
            /already known/i,
          );
          const fate = await this.#watch([tx]);
          if (fate.kind === 'mined') receipt = fate.receipt;
          else {
            // Stuck or replaced: the calls are redone; a new tx at this nonce must outbid this one.
            const fee = feeOf(tx.raw);
            if (fee !== undefined)
              this.#fees.note(tx.nonce, { maxFeePerGas: fee, maxPriorityFeePerGas: fee });
            this.#nonceTag = 'latest';
            log.warn(
              { tx: tx.hash, calls, fate: fate.kind },
              'pending result tx from the last run is not mined; redoing its calls',
            );
          }
        } catch (e) {
          if (e instanceof Aborted) throw e;
          // Nonce used by another transaction: ours can never be mined, so the calls are simply redone.
          log.warn(
            { tx: tx.hash, calls, err: e },
            'pending result tx from the last run cannot be sent; redoing its calls',
          );
        }
      }
      if (receipt?.status === 'success') {
        log.info({ tx: tx.hash, calls }, 'result tx from the last run is on chain; calls done');
        await cursor.settlePending(tx.hash, tx.calls);
        continue;
      }
      if (receipt)
        log.warn({ tx: tx.hash, calls }, 'result tx from the last run reverted; redoing its calls');
      await cursor.removePending(tx.hash);
    }
  }

  /** Queues a result; resolves once it is on chain (or known unnecessary), and the cursor knows. */
  submit(call: CallRef, output: Hex): Promise<SubmitOutcome> {
    if (this.#abort.signal.aborted) return Promise.resolve('aborted');
    return new Promise((settle) => {
      this.#queue.push({ ...call, output, attempts: 0, settle });
      this.#loop ??= this.#run().finally(() => {
        this.#loop = undefined;
        for (const f of this.#idle.splice(0)) f();
      });
    });
  }

  /** Resolves when nothing is queued or in flight, or after `timeoutMs`. */
  async drain(timeoutMs: number): Promise<boolean> {
    if (!this.#loop && this.#queue.length === 0) return true;
    const idle = new Promise<boolean>((r) => this.#idle.push(() => r(true)));
    return Promise.race([idle, sleep(timeoutMs).then(() => false)]);
  }

  /** Stops sending; queued results resolve 'aborted' (their calls stay unfinished and are redone). */
  async stop(): Promise<void> {
    this.#abort.abort();
    for (const i of this.#queue.splice(0)) i.settle('aborted');
    await this.#loop;
  }

  async #run(): Promise<void> {
    // Let results handed in during the same tick join the first batch.
    await Promise.resolve();
    while (this.#queue.length > 0 && !this.#abort.signal.aborted) {
      const batch = this.#queue.splice(0, this.#o.maxBatch);
      try {
        await this.#process(batch);
      } catch (e) {
        for (const i of batch) i.settle('aborted');
        if (!(e instanceof Aborted)) this.#o.log.error({ err: e }, 'result sender failed unexpectedly');
      }
    }
  }

  async #finish(items: Item[], outcome: SubmitOutcome): Promise<void> {
    await Promise.all(items.map((i) => this.#o.cursor.finish(i.callId, i.pos)));
    for (const i of items) i.settle(outcome);
  }

  /**
   * The chain reorganised: the nonce is read again from the chain (a vanished result tx left a gap
   * or may still sit in a mempool, where the next tx at its nonce outbids it), and the tx being
   * watched is looked at again at once.
   */
  reorged(): void {
    this.#nonce = undefined;
    this.#nonceTag = 'latest';
    this.#reorg.abort();
    this.#reorg = new AbortController();
  }

  async #process(all: Item[]): Promise<void> {
    const { client, tangle, serviceId, log } = this.#o;
    this.#t = { start: performance.now() };
    const gone = all.filter((i) => this.#o.isLive?.(i) === false);
    for (const i of gone) i.settle('vanished');
    const batch = all.filter((i) => !gone.includes(i));
    if (batch.length === 0) return;
    // The fees of the send, when their cache is stale, are read meanwhile.
    this.#fees.prefetch((fn) => this.#retry(fn));
    // Pre-check: a completed call needs no result (another operator answered, or we did before a crash).
    let live = batch;
    // The estimate runs beside the pre-check (one round trip, not two); it is used only when the
    // pre-check finds every call still open, else the calls left are estimated again below.
    let early: Promise<bigint | undefined> | undefined;
    if (this.#o.precheckCompleted) {
      early = this.#estimate(batch).catch(() => undefined);
      const state = await callStates(this.#o, batch, (fn) => this.#retry(fn));
      const completed = batch.filter((_, k) => state[k] === 'completed');
      const invalid = batch.filter((_, k) => state[k] === 'invalid');
      if (completed.length > 0) {
        log.info(
          { callIds: completed.map((i) => `${i.callId}`) },
          'job already completed on chain; not sending a result',
        );
        await this.#finish(completed, 'already-done');
      }
      if (invalid.length > 0) await this.#finish(invalid, 'failed');
      live = batch.filter((_, k) => state[k] === 'open');
    }

    // Simulation and gas estimate in one call; reverts are decoded with Tangle's custom errors.
    let gas: bigint | undefined = live.length === batch.length ? await early : undefined;
    while (live.length > 0 && gas === undefined) {
      try {
        gas = await this.#estimate(live);
      } catch (e) {
        const rev = revertOf(e);
        if (rev === undefined) {
          await this.#pause(e, 'estimating a result transaction failed; retrying');
          continue;
        }
        if (rev !== 'no-data' && DONE_ERRORS.has(rev.errorName)) {
          // Both errors carry (serviceId, callId, ...): drop that call and estimate the rest again.
          const callId = rev.args[1];
          const done = live.length === 1 ? live : live.filter((i) => i.callId === callId);
          if (done.length === 0) {
            for (const i of live) await this.#process([i]);
            return;
          }
          log.info(
            { callId: `${done[0]!.callId}`, reason: rev.errorName },
            'result not needed; call counts as done',
          );
          await this.#finish(done, 'already-done');
          live = live.filter((i) => !done.includes(i));
          continue;
        }
        if (live.length > 1) {
          for (const i of live) await this.#process([i]); // isolate the call that reverts
          return;
        }
        const reason = rev === 'no-data' ? 'reverted without data' : rev.errorName;
        log.error(
          { callId: `${live[0]!.callId}`, reason, err: e },
          'result transaction would revert; giving up on this call',
        );
        await this.#finish(live, 'failed');
        return;
      }
    }
    if (live.length === 0 || gas === undefined) return;
    this.#t['estimated'] = performance.now();
    await this.#send(live, gas);
  }

  #estimate(items: Item[]): Promise<bigint> {
    return estimateResultGas({ ...this.#o, headroomPct: this.#o.gasHeadroomPct }, items);
  }

  async #send(items: Item[], gas: bigint): Promise<void> {
    const { client, tangle, serviceId, account, chainId, cursor, log } = this.#o;
    const data = resultCalldata(serviceId, items);
    this.#nonce ??= await this.#retry(() =>
      client.getTransactionCount({ address: account.address, blockTag: this.#nonceTag }),
    );
    this.#nonceTag = 'pending';
    const nonce = this.#nonce;
    const callIds = items.map((i) => `${i.callId}`);
    // Every tx signed at this nonce (a stuck one is replaced with higher fees; any may be mined).
    const txs: PendingResultTx[] = [];
    let baseFee: bigint | undefined;
    for (let bumps = 0; ; ) {
      const fees = await this.#fees.forNonce(nonce, (fn) => this.#retry(fn), baseFee);
      const raw = await account.signTransaction!({
        type: 'eip1559',
        chainId,
        to: tangle,
        data,
        nonce,
        gas,
        ...fees,
      });
      const tx: PendingResultTx = {
        hash: keccak256(raw),
        raw,
        nonce,
        calls: items.map((i) => ({ callId: i.callId, pos: i.pos, blockHash: i.blockHash })),
      };
      // Durable before broadcast: after a crash the SAME signed bytes are re-sent, so no second result.
      await this.#durably(() => cursor.addPending(tx));
      this.#t['persisted'] = performance.now();
      this.#nonce = nonce + 1;
      try {
        await this.#retry(() => client.sendRawTransaction({ serializedTransaction: raw }), /already known/i);
        txs.push(tx);
      } catch (e) {
        if (e instanceof Aborted) throw e;
        // The node refused these bytes, so they can never be mined: forget them.
        await cursor.removePending(tx.hash);
        if (txs.length === 0) return this.#refused(items, nonce, e);
        // A replacement refused: the txs already sent at this nonce are still watched.
        log.warn({ err: e, nonce, callIds }, 'replacement result tx refused; watching the earlier one');
      }
      this.#t['sent'] ??= performance.now();
      const fate = await this.#watch(txs);
      if (fate.kind === 'reorg') return this.#afterReorg(items, txs);
      if (fate.kind === 'mined') {
        for (const t of txs) if (t.hash !== fate.tx.hash) await cursor.removePending(t.hash);
        return this.#mined(items, fate.tx, fate.receipt);
      }
      if (fate.kind === 'nonce-used') {
        for (const t of txs) await cursor.removePending(t.hash);
        log.warn(
          { nonce, callIds, txs: txs.map((t) => t.hash) },
          'another transaction of this key took the nonce of a result tx; re-checking and re-signing its calls',
        );
        this.#nonce = undefined;
        return this.#again(items, 'its nonce was taken by another transaction every time');
      }
      if (++bumps > this.#o.maxFeeBumps) {
        for (const t of txs) await cursor.removePending(t.hash);
        // The next tx replaces this nonce's (its fees outbid them), so nothing queues behind it.
        this.#nonce = undefined;
        this.#nonceTag = 'latest';
        log.error(
          { nonce, callIds, reason: fate.reason, bumps: bumps - 1, txs: txs.map((t) => t.hash) },
          'result tx still not mined after every fee bump; giving up on these calls',
        );
        return this.#finish(items, 'failed');
      }
      baseFee = fate.baseFee;
      log.warn(
        {
          nonce,
          callIds,
          reason: fate.reason,
          baseFee: baseFee === undefined ? null : `${baseFee}`,
          bump: bumps,
        },
        'result tx stuck; re-signing it at the same nonce with higher fees',
      );
    }
  }

  /** The first broadcast at a nonce was refused: fix the fee or the nonce, and sign again. */
  async #refused(items: Item[], nonce: number, e: unknown): Promise<void> {
    const callIds = items.map((i) => `${i.callId}`);
    if (!NONCE_ERROR.test(messageOf(e)) && FEE_ERROR.test(messageOf(e))) {
      this.#o.log.warn(
        { err: e, nonce, callIds },
        'result tx refused for its fee; refreshing fees and re-signing',
      );
      this.#fees.refresh();
      this.#nonce = nonce;
      await sleep(1000, this.#abort.signal);
      return this.#process(items);
    }
    // Nonce taken (another sender on this key, or a stale count): resync, then redo these calls.
    this.#o.log.warn({ err: e, nonce, callIds }, 'result tx rejected for its nonce; resyncing the nonce');
    this.#nonce = undefined;
    return this.#again(items, 'its nonce was refused every time');
  }

  /** Runs the calls through the whole path again (pre-check included), a bounded number of times. */
  async #again(items: Item[], why: string): Promise<void> {
    const retry = items.filter((i) => ++i.attempts < 3);
    const failed = items.filter((i) => i.attempts >= 3);
    if (failed.length) {
      this.#o.log.error({ callIds: failed.map((i) => `${i.callId}`), why }, 'giving up on these results');
      await this.#finish(failed, 'failed');
    }
    if (retry.length) await this.#process(retry);
  }

  async #mined(items: Item[], tx: PendingResultTx, receipt: TransactionReceipt): Promise<void> {
    const { cursor, log } = this.#o;
    const callIds = items.map((i) => `${i.callId}`);
    if (receipt.status === 'success') {
      const t = this.#t;
      const ms = (a: string, b: string) => Math.round(((t[b] ?? 0) - (t[a] ?? 0)) * 10) / 10;
      t['mined'] = performance.now();
      log.info(
        {
          tx: tx.hash,
          callIds,
          block: `${receipt.blockNumber}`,
          ms: {
            check: ms('start', 'estimated'),
            persist: ms('estimated', 'persisted'),
            send: ms('persisted', 'sent'),
            receipt: ms('sent', 'mined'),
          },
        },
        'job results submitted',
      );
      await this.#durably(() => cursor.settlePending(tx.hash, tx.calls));
      for (const i of items) i.settle('submitted');
      return;
    }
    // Mined but reverted (e.g. another operator completed a call in between): check again, bounded.
    await cursor.removePending(tx.hash);
    log.warn({ tx: tx.hash, callIds }, 'result tx reverted on chain; re-checking its calls');
    await this.#again(items, 'its result tx reverted every time');
  }

  async #watch(txs: PendingResultTx[]): Promise<ResultTxFate | { kind: 'reorg' }> {
    const { client, account, stuckAfterMs } = this.#o;
    const signal = AbortSignal.any([this.#abort.signal, this.#reorg.signal]);
    try {
      return await watchResultTx(txs, { client, address: account.address, signal, stuckAfterMs });
    } catch (e) {
      if (e instanceof Aborted && !this.#abort.signal.aborted) return { kind: 'reorg' };
      throw e;
    }
  }

  /** A reorg while `txs` were watched: keep a mined one; else drop vanished calls and sign again. */
  async #afterReorg(items: Item[], txs: PendingResultTx[]): Promise<void> {
    const { client, cursor, log } = this.#o;
    for (const t of txs) {
      const r = await client.getTransactionReceipt({ hash: t.hash }).catch(() => undefined);
      if (r) {
        for (const o of txs) if (o.hash !== t.hash) await cursor.removePending(o.hash);
        return this.#mined(items, t, r);
      }
    }
    for (const t of txs) await cursor.removePending(t.hash);
    const live = items.filter((i) => this.#o.isLive?.(i) !== false);
    log.warn(
      { callIds: items.map((i) => `${i.callId}`), live: live.map((i) => `${i.callId}`) },
      'a reorg removed the result tx; re-sending the results of the calls that still exist',
    );
    if (live.length === 0) await this.#cancel(txs[0]!.nonce);
    return this.#process(items);
  }

  /** Outbids a tx still pooled at `nonce` (its calls are gone) with a 0-value transfer to ourselves. */
  async #cancel(nonce: number): Promise<void> {
    const { client, account, chainId } = this.#o;
    const count = await this.#retry(() =>
      client.getTransactionCount({ address: account.address, blockTag: 'latest' }),
    );
    if (count > nonce) return;
    const fees = await this.#fees.forNonce(nonce, (fn) => this.#retry(fn));
    const raw = await account.signTransaction!({
      type: 'eip1559',
      chainId,
      to: account.address,
      value: 0n,
      nonce,
      gas: 21_000n,
      ...fees,
    });
    await client.sendRawTransaction({ serializedTransaction: raw }).catch(() => {});
  }

  #retry<T>(fn: () => Promise<T>, okIf?: RegExp): Promise<T> {
    return retryRpc(fn, this.#abort.signal, this.#o.log, okIf);
  }

  /**
   * A cursor write that fails (its disk is full) is retried until it holds — the in-memory state
   * is already updated, so the retry writes the same — instead of dropping the calls until a
   * restart; the result goes out once there is room.
   */
  async #durably(write: () => Promise<void>): Promise<void> {
    for (;;) {
      try {
        return await write();
      } catch (e) {
        if (!isSdkError(e, 'CURSOR')) throw e;
        await this.#pause(e, 'cannot write the job cursor (is the data dir full?); retrying');
      }
    }
  }

  async #pause(err: unknown, msg: string): Promise<void> {
    this.#o.log.warn({ err }, msg);
    await sleep(500, this.#abort.signal);
    if (this.#abort.signal.aborted) throw new Aborted();
  }
}
