// Wires producer → router → handlers → consumer with bounded concurrency, a durable cursor, and a
// graceful stop: `createRunner(opts)`, then `runner.start()` / `runner.stop()`.
import type { Logger } from 'pino';

import { createPublicClient, type Hex, http, type PublicClient } from 'viem';
import { sleep } from './backoff.ts';
import { ResultConsumer } from './consumer.ts';
import { SdkError } from './errors.ts';
import { JobCursor } from './job-cursor.ts';
import type { JobContext, JobRouter } from './job-router.ts';
import { defaultLogger } from './logger.ts';
import { JobProducer } from './producer.ts';
import { sortCallsAfterFork } from './reorg.ts';
import type { ChainStatus, RunnerOptions, VanishedCall } from './runner-options.ts';

export type { ChainStatus, RunnerOptions, VanishedCall };

import { type JobSubmittedEvent, positionOf } from './tangle-events.ts';

const callKey = (callId: bigint, blockHash: Hex | undefined) => `${callId}:${blockHash?.toLowerCase() ?? ''}`;

export class BlueprintRunner {
  readonly #o: RunnerOptions;
  readonly log: Logger;
  #state: 'new' | 'starting' | 'running' | 'stopping' | 'stopped' = 'new';
  #cursor: JobCursor | undefined;
  #consumer: ResultConsumer | undefined;
  #producerRun: Promise<void> | undefined;
  #stopped: Promise<void> | undefined;
  readonly #producerAbort = new AbortController();
  readonly #jobsAbort = new AbortController();
  readonly #tasks = new Set<Promise<void>>();
  #slots: number;
  readonly #waiters: Array<{ go: () => void; fail: (e: Error) => void }> = [];
  /** Calls a reorg removed (id and block hash): their handlers' work is undone, never answered. */
  readonly #gone = new Set<string>();
  /** Vanished calls already handed to onCallVanished. */
  readonly #undone = new Set<string>();
  #client: PublicClient | undefined;
  readonly #status: ChainStatus = {};
  #recoverUntil = 0n;
  /** Set while a reorg is being sorted out: a handler ending meanwhile waits for its verdict. */
  #reorging: Promise<void> | undefined;

  constructor(opts: RunnerOptions) {
    this.#o = opts;
    this.#slots = opts.concurrency ?? 4;
    this.log = (opts.logger ?? defaultLogger()).child({
      serviceId: `${opts.serviceId}`,
      operator: opts.key.address,
    });
  }

  get cursor(): JobCursor | undefined {
    return this.#cursor;
  }

  get state(): string {
    return this.#state;
  }

  /** The chain as the runner last saw it (reachable, last reorg and its recovery). */
  get chainStatus(): ChainStatus {
    return structuredClone(this.#status);
  }

  /** Opens the cursor, settles result txs left by the last run, then starts following jobs. */
  async start(): Promise<void> {
    if (this.#state !== 'new')
      throw new SdkError('RUNNER_STATE', `The runner was already started (${this.#state}).`);
    this.#state = 'starting';
    const o = this.#o;
    const client = createPublicClient({ transport: http(o.httpRpcUrl) });
    this.#client = client;
    let chainId: number;
    let head: bigint;
    try {
      [chainId, head] = await Promise.all([client.getChainId(), client.getBlockNumber({ cacheTime: 0 })]);
    } catch (e) {
      this.#state = 'stopped';
      throw new SdkError('RPC', `Cannot reach the chain at ${o.httpRpcUrl}: check HTTP_RPC_URL.`, {
        cause: e,
      });
    }
    const conf = BigInt(o.confirmations ?? 0);
    const start = o.startBlock ?? 'latest';
    const cursor = await JobCursor.open(
      o.dataDir,
      { chainId, tangle: o.tangle, serviceId: o.serviceId },
      async () => (start === 'latest' ? (head > conf ? head - conf : 0n) : start),
    );
    if (cursor.position.block > head + 1n) {
      this.#state = 'stopped';
      throw new SdkError(
        'CURSOR',
        `The job cursor ${cursor.path} is at block ${cursor.position.block} but the chain head is ${head}: ` +
          'the chain was reset or this is another chain. Move the file away to start fresh.',
      );
    }
    this.#cursor = cursor;
    this.#consumer = new ResultConsumer({
      client,
      account: o.key.account,
      chainId,
      tangle: o.tangle,
      serviceId: o.serviceId,
      cursor,
      log: this.log,
      maxBatch: o.maxBatch ?? 16,
      precheckCompleted: o.precheckCompleted ?? true,
      isLive: (c) => !this.#gone.has(callKey(c.callId, c.blockHash)),
      ...(o.stuckAfterMs !== undefined ? { stuckAfterMs: o.stuckAfterMs } : {}),
      ...(o.maxFeeBumps !== undefined ? { maxFeeBumps: o.maxFeeBumps } : {}),
    });
    await this.#consumer.recover();
    const producer = new JobProducer({
      client,
      wsRpcUrl: o.wsRpcUrl,
      tangle: o.tangle,
      serviceId: o.serviceId,
      pollIntervalMs: o.pollIntervalMs ?? 1000,
      windowBlocks: o.windowBlocks ?? 500,
      confirmations: o.confirmations ?? 0,
      log: this.log,
      onRpcState: (err) => this.#rpcState(err),
    });
    this.#producerRun = producer.run(
      cursor.position.block,
      {
        deliver: (e) => this.#deliver(e),
        scanned: (b, h) => {
          cursor.scanned(b, h);
          const r = this.#status.lastReorg;
          if (r?.recovering) r.scannedTo = `${b}`;
          if (r?.recovering && b >= this.#recoverUntil) {
            r.recovering = false;
            this.log.info(
              { fork: r.fork, vanished: r.vanished, resent: r.resent },
              'reorg recovered: scanned past the old head',
            );
          }
        },
        recentBlocks: () => cursor.recentBlocks,
        reorg: (fork) => this.#reorg(fork),
      },
      this.#producerAbort.signal,
    );
    this.#state = 'running';
    this.log.info(
      {
        chainId,
        cursor: `${cursor.position.block}:${cursor.position.logIndex}`,
        concurrency: this.#slots,
        routes: o.router.jobIndexes,
      },
      'blueprint runner started',
    );
  }

  /**
   * Stops taking jobs, lets in-flight handlers and queued results finish within the grace period,
   * then aborts the rest (they stay unfinished in the cursor and are redone after restart).
   */
  stop(): Promise<void> {
    if (this.#state === 'new') {
      this.#state = 'stopped';
      return Promise.resolve();
    }
    this.#stopped ??= this.#doStop();
    return this.#stopped;
  }

  async #doStop(): Promise<void> {
    this.#state = 'stopping';
    const grace = this.#o.shutdownGraceMs ?? 10_000;
    this.#producerAbort.abort();
    for (const w of this.#waiters.splice(0)) w.fail(new SdkError('RUNNER_STATE', 'The runner is stopping.'));
    await this.#producerRun?.catch(() => {});
    const t0 = Date.now();
    const settled = await Promise.race([
      Promise.all(this.#tasks).then(() => true),
      sleep(grace).then(() => false),
    ]);
    if (!settled) {
      this.log.warn({ inFlight: this.#tasks.size }, 'aborting handlers still running after the grace period');
      this.#jobsAbort.abort();
    }
    await this.#consumer?.drain(Math.max(0, grace - (Date.now() - t0)));
    await this.#consumer?.stop();
    await Promise.race([Promise.all(this.#tasks), sleep(2_000)]);
    await this.#cursor?.persist();
    this.#state = 'stopped';
    const p = this.#cursor?.position;
    this.log.info({ cursor: p ? `${p.block}:${p.logIndex}` : undefined }, 'blueprint runner stopped');
  }

  async #acquire(): Promise<void> {
    if (this.#slots > 0) {
      this.#slots--;
      return;
    }
    await new Promise<void>((go, fail) => this.#waiters.push({ go, fail }));
  }

  #release(): void {
    const w = this.#waiters.shift();
    if (w) w.go();
    else this.#slots++;
  }

  /** Called by the producer in chain order; waiting here is the producer's backpressure. */
  async #deliver(event: JobSubmittedEvent): Promise<void> {
    const cursor = this.#cursor!;
    const pos = positionOf(event);
    if (
      cursor.isFinished(event.callId, pos, event.blockHash) ||
      cursor.isInFlight(event.callId, event.blockHash) ||
      cursor.isPending(event.callId, event.blockHash)
    )
      return;
    // Throwing (not returning) when stopping keeps the producer from marking this block scanned.
    if (this.#producerAbort.signal.aborted) throw new SdkError('RUNNER_STATE', 'The runner is stopping.');
    await this.#acquire();
    cursor.begin(event.callId, pos, event.blockHash);
    const task = this.#runJob(event).finally(() => this.#tasks.delete(task));
    this.#tasks.add(task);
  }

  /**
   * The chain forked after `fork`. Calls above it whose log block is gone vanished: forgotten, and
   * what was built for them undone. Calls we answered whose log survived but whose result is no
   * longer on chain are served again (the handler answers the same way). Returns where to rescan.
   */
  async #reorg(fork: bigint): Promise<bigint> {
    let sorted!: () => void;
    this.#reorging = new Promise<void>((r) => {
      sorted = r;
    });
    try {
      return await this.#sortReorg(fork);
    } finally {
      this.#reorging = undefined;
      sorted();
    }
  }

  /** Whether a reorg removed this call; waits for one being sorted out to decide first. */
  async #isGone(event: JobSubmittedEvent): Promise<boolean> {
    while (this.#reorging) await this.#reorging;
    return this.#gone.has(callKey(event.callId, event.blockHash));
  }

  async #sortReorg(fork: bigint): Promise<bigint> {
    const cursor = this.#cursor!;
    const client = this.#client!;
    const oldTop = cursor.recentBlocks[0]?.block ?? fork;
    const status: NonNullable<ChainStatus['lastReorg']> = {
      at: Date.now(),
      fork: `${fork}`,
      oldHead: `${oldTop}`,
      scannedTo: `${fork}`,
      vanished: [],
      resent: [],
      recovering: true,
    };
    this.#status.lastReorg = status;
    const { vanished, redo } = await sortCallsAfterFork(
      cursor,
      client,
      this.#o.tangle,
      this.#o.serviceId,
      fork,
    );
    this.#recoverUntil = oldTop;
    for (const c of vanished) {
      this.#gone.add(callKey(c.callId, c.blockHash));
      await cursor.forget(c.callId);
      status.vanished.push(`${c.callId}`);
      // One still in flight is undone when its handler returns (see #runJob).
      if (c.state !== 'in-flight')
        await this.#vanished({
          serviceId: this.#o.serviceId,
          callId: c.callId,
          blockNumber: c.pos.block,
          blockHash: c.blockHash,
        });
    }
    for (const c of redo) {
      await cursor.forget(c.callId);
      status.resent.push(`${c.callId}`);
    }
    this.#consumer?.reorged();
    this.log.warn(
      { fork: `${fork}`, vanished: status.vanished, resent: status.resent },
      'reorg: calls whose logs are gone are undone and get no result; answered calls whose results are gone are served again; the nonce is read again',
    );
    const from = cursor.position.block;
    return from < fork + 1n ? from : fork + 1n;
  }

  /** The job scan's RPC answered (undefined) or failed: /health shows since when it fails. */
  #rpcState(err: unknown): void {
    // A block that changed under a scan is the chain moving, not the RPC failing.
    if (err instanceof SdkError) return;
    if (err === undefined) {
      if (this.#status.unreachableSince !== undefined)
        this.log.info(
          { downMs: Date.now() - this.#status.unreachableSince },
          'chain RPC answering again; catching up from the cursor',
        );
      delete this.#status.unreachableSince;
    } else this.#status.unreachableSince ??= Date.now();
  }

  async #vanished(call: VanishedCall | JobSubmittedEvent, output?: Hex): Promise<void> {
    const key = callKey(call.callId, call.blockHash);
    if (this.#undone.has(key)) return; // undone once only, whichever path saw it first
    this.#undone.add(key);
    const v: VanishedCall = {
      serviceId: call.serviceId,
      callId: call.callId,
      blockNumber: call.blockNumber,
      blockHash: call.blockHash,
      ...(output !== undefined ? { output } : {}),
    };
    this.log.warn(
      { callId: `${v.callId}`, block: `${v.blockNumber}` },
      'a reorg removed this call; undoing its work, no result',
    );
    try {
      await this.#o.onCallVanished?.(v);
    } catch (err) {
      this.log.error({ err, callId: `${v.callId}` }, 'undoing the work of a vanished call failed');
    }
  }

  async #after(log: Logger, done: Parameters<NonNullable<RunnerOptions['afterJob']>>[0]): Promise<void> {
    if (!this.#o.afterJob || done.outcome === 'aborted') return;
    try {
      await this.#o.afterJob(done);
    } catch (err) {
      log.error({ err }, 'afterJob follow-up failed');
    }
  }

  async #runJob(event: JobSubmittedEvent): Promise<void> {
    const o = this.#o;
    const log = this.log.child({ callId: `${event.callId}`, jobIndex: event.jobIndex });
    const ctx: JobContext = {
      serviceId: event.serviceId,
      callId: event.callId,
      jobIndex: event.jobIndex,
      caller: event.caller,
      blockNumber: event.blockNumber,
      transactionHash: event.transactionHash,
      blockHash: event.blockHash,
      log,
      signal: this.#jobsAbort.signal,
    };
    let outcome: Awaited<ReturnType<JobRouter['dispatch']>>;
    try {
      o.onJobStart?.(event);
      const attempts = Math.max(1, o.handlerAttempts ?? 3);
      for (let attempt = 1; ; attempt++) {
        outcome = await o.router.dispatch({ jobIndex: event.jobIndex, input: event.inputs }, ctx);
        if (outcome.kind !== 'skip' || outcome.reason !== 'handler-error') break;
        if (attempt >= attempts) {
          log.error({ attempts }, 'handler failed on every attempt; skipping the call');
          break;
        }
        const delayMs = (o.handlerRetryDelayMs ?? 1000) * 2 ** (attempt - 1);
        log.warn({ attempt, attempts, delayMs }, 'handler failed; retrying the call');
        await sleep(delayMs, this.#jobsAbort.signal);
        if (this.#jobsAbort.signal.aborted) throw new SdkError('RUNNER_STATE', 'The runner is stopping.');
      }
    } catch (err) {
      log.warn(
        { err },
        'handler aborted by shutdown; the call stays unfinished and runs again after restart',
      );
      return;
    } finally {
      this.#release();
    }
    if (await this.#isGone(event)) {
      // A reorg removed the call while its handler ran: undo, never answer (the cursor forgot it).
      await this.#vanished(event, outcome.kind === 'skip' ? undefined : outcome.output);
      return;
    }
    try {
      if (outcome.kind === 'skip') {
        await this.#cursor!.finish(event.callId);
        o.onJobDone?.(event, 'skipped');
        await this.#after(log, { event, outcome: 'skipped', skipReason: outcome.reason });
        return;
      }
      const r = await this.#consumer!.submit(
        { callId: event.callId, pos: positionOf(event), blockHash: event.blockHash },
        outcome.output,
      );
      // A reorg sorted out while the result was being sent (the call in flight then) undoes it here.
      if (r === 'vanished' || (r !== 'aborted' && (await this.#isGone(event))))
        return await this.#vanished(event, outcome.output);
      o.onJobDone?.(event, r);
      await this.#after(log, { event, outcome: r, output: outcome.output });
    } catch (err) {
      log.error({ err }, 'could not record the job as finished (cursor write failed?)');
    }
  }
}

export function createRunner(opts: RunnerOptions): BlueprintRunner {
  return new BlueprintRunner(opts);
}
