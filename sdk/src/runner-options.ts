// The runner's options and the facts it reports (a vanished call, the chain status), with the
// mapping from the validated environment.
import type { Logger } from 'pino';
import type { Address, Hex } from 'viem';
import type { SubmitOutcome } from './consumer.ts';
import type { BlueprintEnvironment } from './env.ts';
import { SdkError } from './errors.ts';
import type { JobRouter } from './job-router.ts';
import type { OperatorKey } from './keystore.ts';
import type { JobSubmittedEvent } from './tangle-events.ts';

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
  /**
   * A reorg removed a call this runner handled (its result, if sent, is gone with it, and none is
   * sent again): undo what the handler built for it. `output` is the handler's value when the
   * call was still being answered. Awaited; errors are logged.
   */
  onCallVanished?: (call: VanishedCall) => Promise<void>;
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

/** A call a reorg removed (see RunnerOptions.onCallVanished). */
export interface VanishedCall {
  serviceId: bigint;
  callId: bigint;
  blockNumber: bigint;
  blockHash: Hex | undefined;
  output?: Hex;
}

/** What the runner last saw of the chain, for /health. */
export interface ChainStatus {
  /** Since when the RPC fails (epoch ms), while it does: the job scan got no answer since then. */
  unreachableSince?: number;
  /**
   * The last reorg: when, its fork block, the calls it removed and those answered again, and the
   * rescan's progress (scanned up to `scannedTo`; recovered once past `oldHead`, the newest block
   * scanned before the reorg).
   */
  lastReorg?: {
    at: number;
    fork: string;
    oldHead: string;
    scannedTo: string;
    vanished: string[];
    resent: string[];
    recovering: boolean;
  };
}
