// Wires producer → router → handlers → consumer with bounded concurrency, a durable cursor, and a
// graceful stop: `createRunner(opts)`, then `runner.start()` / `runner.stop()`.
import type { Logger } from 'pino';
import { type Address, createPublicClient, type Hex, http } from 'viem';
import { sleep } from './backoff.ts';
import { ResultConsumer, type SubmitOutcome } from './consumer.ts';
import type { BlueprintEnvironment } from './env.ts';
import { SdkError } from './errors.ts';
import { JobCursor } from './job-cursor.ts';
import type { JobContext, JobRouter } from './job-router.ts';
import type { OperatorKey } from './keystore.ts';
import { defaultLogger } from './logger.ts';
import { JobProducer } from './producer.ts';
import { type JobSubmittedEvent, positionOf } from './tangle-events.ts';

export interface RunnerOptions {
  router: JobRouter;
  key: OperatorKey;
  httpRpcUrl: string;
  /** With a WebSocket URL the producer reacts to new heads instead of polling. */
  wsRpcUrl?: string | undefined;
  tangle: Address;
  serviceId: bigint;
  /** Holds the durable cursor file (see JobCursor.fileFor). */
  dataDir: string;
  /** Handlers running at once (default 4). */
  concurrency?: number;
  pollIntervalMs?: number;
  windowBlocks?: number;
  /** Blocks to wait below the head before taking a job (default 0). */
  confirmations?: number;
  /**
   * Where to start when DATA_DIR has no cursor yet (default 'latest': the current head minus
   * confirmations; in every mode, so a fresh operator never replays a service's history by
   * surprise). Pass a block number to replay from there; completed calls are recognised on chain.
   */
  startBlock?: bigint | 'latest';
  /**
   * Attempts for a handler that throws (a transient RPC failure, say) before the call is skipped
   * (default 3). Handlers must be idempotent by call id: a retry may follow partial work.
   */
  handlerAttempts?: number;
  /** Delay before the first retry of a throwing handler, doubled for each later one (default 1 s). */
  handlerRetryDelayMs?: number;
  /** How long stop() lets in-flight handlers and queued results finish before aborting (default 10 s). */
  shutdownGraceMs?: number;
  maxBatch?: number;
  /** See ResultConsumerOptions.precheckCompleted (default true). */
  precheckCompleted?: boolean;
  /** See ResultConsumerOptions.stuckAfterMs (default 30 s). */
  stuckAfterMs?: number;
  /** See ResultConsumerOptions.maxFeeBumps (default 5). */
  maxFeeBumps?: number;
  logger?: Logger;
  /** Observation hooks (metrics, benchmarks); they must not throw. */
  onJobStart?: (event: JobSubmittedEvent) => void;
  onJobDone?: (event: JobSubmittedEvent, outcome: SubmitOutcome | 'skipped') => void;
  /**
   * Follow-up work once a call is done, awaited before the job slot is counted finished (errors
   * are logged): the handler's output (absent for a skip), how its result ended, and why a call
   * was skipped. A blueprint uses it to record its outcome elsewhere when Tangle was completed by
   * another operator ('already-done'), or to give back what it reserved when it gave up.
   */
  afterJob?: (done: {
    event: JobSubmittedEvent;
    outcome: SubmitOutcome | 'skipped';
    skipReason?: string;
    output?: Hex;
  }) => Promise<void>;
}

/** Runner options from the validated environment (SERVICE_ID must be set: not registration mode). */
export function runnerOptionsFromEnvironment(
  env: BlueprintEnvironment,
  key: OperatorKey,
  router: JobRouter,
  extra: Partial<RunnerOptions> = {},
): RunnerOptions {
  if (env.serviceId === undefined) {
    throw new SdkError(
      'CONFIG',
      'SERVICE_ID is not set (registration mode?): the job runner needs a service.',
    );
  }
  return {
    router,
    key,
    httpRpcUrl: env.httpRpcUrl,
    wsRpcUrl: env.wsRpcUrl,
    tangle: env.tangleContract,
    serviceId: env.serviceId,
    dataDir: env.dataDir,
    ...extra,
  };
}

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

  /** Opens the cursor, settles result txs left by the last run, then starts following jobs. */
  async start(): Promise<void> {
    if (this.#state !== 'new')
      throw new SdkError('RUNNER_STATE', `The runner was already started (${this.#state}).`);
    this.#state = 'starting';
    const o = this.#o;
    const client = createPublicClient({ transport: http(o.httpRpcUrl) });
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
    });
    this.#producerRun = producer.run(
      cursor.position.block,
      { deliver: (e) => this.#deliver(e), scanned: (b, h) => cursor.scanned(b, h) },
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
      cursor.isFinished(event.callId, pos) ||
      cursor.isInFlight(event.callId) ||
      cursor.isPending(event.callId)
    )
      return;
    // Throwing (not returning) when stopping keeps the producer from marking this block scanned.
    if (this.#producerAbort.signal.aborted) throw new SdkError('RUNNER_STATE', 'The runner is stopping.');
    await this.#acquire();
    cursor.begin(event.callId, pos);
    const task = this.#runJob(event).finally(() => this.#tasks.delete(task));
    this.#tasks.add(task);
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
    try {
      if (outcome.kind === 'skip') {
        await this.#cursor!.finish(event.callId);
        o.onJobDone?.(event, 'skipped');
        await this.#after(log, { event, outcome: 'skipped', skipReason: outcome.reason });
        return;
      }
      const r = await this.#consumer!.submit(
        { callId: event.callId, pos: positionOf(event) },
        outcome.output,
      );
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
