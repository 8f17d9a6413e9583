// Maps a job index to its handler: decodes the ABI input, runs the handler, encodes the result.

import type { Logger } from 'pino';
import type { Address, Hex } from 'viem';
import { SdkError } from './errors.ts';
import { type JobSchema, type JobValue, jobArg, jobResult } from './job-abi.ts';

/** Returned by a handler that does not answer this call (e.g. this operator is not the assigned one). */
export const SKIP: unique symbol = Symbol.for('agent-sandbox.sdk.skip');
export type Skip = typeof SKIP;

/** What a handler learns about the call besides its input. */
export interface JobContext {
  serviceId: bigint;
  callId: bigint;
  jobIndex: number;
  caller: Address;
  blockNumber: bigint;
  transactionHash: Hex | undefined;
  /** Hash of the log's block: with callId, the call's identity (a reorg may reuse an id). */
  blockHash?: Hex | undefined;
  /** pino child logger carrying serviceId, callId and jobIndex. */
  log: Logger;
  /** Aborted when the runner shuts down before the handler finished; stop work and throw. */
  signal: AbortSignal;
}

/** A raw handler: input bytes in, result bytes out (or undefined / SKIP for "no answer"). */
export type RawJobHandler = (
  input: Hex,
  ctx: JobContext,
) => Promise<Hex | undefined | Skip> | Hex | undefined | Skip;

/** A typed handler: decoded argument in; result bytes, or a value when the route declares `output`. */
export type TypedJobHandler<I extends JobSchema, R> = (
  arg: JobValue<I>,
  ctx: JobContext,
) => Promise<R | undefined | Skip> | R | undefined | Skip;

export interface JobSpec<I extends JobSchema, O extends JobSchema | undefined> {
  /** Human name used in logs and decode errors. */
  name?: string;
  input: I;
  /** When given, the handler returns a value that is encoded with `jobResult(output, value)`. */
  output?: O;
}

/** The outcome of dispatching one call. */
export type DispatchOutcome =
  | { kind: 'result'; output: Hex }
  | {
      kind: 'skip';
      reason: 'handler-skipped' | 'unknown-job' | 'bad-input' | 'handler-error';
      error?: unknown;
    };

export interface JobCall {
  jobIndex: number;
  input: Hex;
}

type Route = (call: JobCall, ctx: JobContext) => Promise<Hex | undefined | Skip>;

export class JobRouter {
  readonly #routes = new Map<number, { name: string; run: Route }>();

  /** Raw route: the handler gets the input bytes and returns result bytes. */
  route(jobIndex: number, handler: RawJobHandler): this;
  /** Typed route: input decoded with `jobArg(spec.input)` (flat or tuple), output encoded if `spec.output`. */
  route<const I extends JobSchema, const O extends JobSchema | undefined = undefined>(
    jobIndex: number,
    spec: JobSpec<I, O>,
    handler: TypedJobHandler<I, O extends JobSchema ? JobValue<O> : Hex>,
  ): this;
  route(jobIndex: number, a: RawJobHandler | JobSpec<JobSchema, JobSchema | undefined>, b?: unknown): this {
    if (!Number.isInteger(jobIndex) || jobIndex < 0 || jobIndex > 255) {
      throw new SdkError('ROUTER', `Job index ${jobIndex} is not a uint8 (0..255).`);
    }
    if (this.#routes.has(jobIndex)) {
      throw new SdkError('ROUTER', `Job index ${jobIndex} already has a handler; route each index once.`);
    }
    if (typeof a === 'function') {
      this.#routes.set(jobIndex, { name: `job ${jobIndex}`, run: async (call, ctx) => a(call.input, ctx) });
      return this;
    }
    const spec = a;
    const handler = b as TypedJobHandler<JobSchema, unknown>;
    if (typeof handler !== 'function')
      throw new SdkError('ROUTER', `Job ${jobIndex}: the handler is missing.`);
    const name = spec.name ? `job ${jobIndex} (${spec.name})` : `job ${jobIndex}`;
    const decode = jobArg(spec.input, { job: name });
    this.#routes.set(jobIndex, {
      name,
      run: async (call, ctx) => {
        const arg = decode(call.input);
        const out = await handler(arg, ctx);
        if (out === undefined || out === SKIP) return out;
        if (spec.output) return jobResult(spec.output, out as never, { job: name });
        if (typeof out !== 'string' || !out.startsWith('0x')) {
          throw new SdkError(
            'JOB_RESULT_ENCODE',
            `${name} returned a non-hex value but its route declares no output schema; declare \`output\` or return bytes.`,
          );
        }
        return out as Hex;
      },
    });
    return this;
  }

  has(jobIndex: number): boolean {
    return this.#routes.has(jobIndex);
  }

  get jobIndexes(): number[] {
    return [...this.#routes.keys()].sort((x, y) => x - y);
  }

  /**
   * Runs the call's handler. Never throws for a job's own problems: an unknown index, bad input or
   * a failing handler become a logged skip (the runner retries a failing handler first), so one bad
   * call cannot stop the operator. An abort (shutdown) is rethrown so the runner leaves the call
   * unfinished and redoes it after restart.
   */
  async dispatch(call: JobCall, ctx: JobContext): Promise<DispatchOutcome> {
    const route = this.#routes.get(call.jobIndex);
    if (!route) {
      ctx.log.warn({ known: this.jobIndexes }, 'no handler for this job index; skipping the call');
      return { kind: 'skip', reason: 'unknown-job' };
    }
    try {
      const out = await route.run(call, ctx);
      if (out === undefined || out === SKIP) {
        ctx.log.debug('handler did not answer this call');
        return { kind: 'skip', reason: 'handler-skipped' };
      }
      return { kind: 'result', output: out };
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      if (error instanceof SdkError && error.code === 'JOB_INPUT_DECODE') {
        ctx.log.error({ err: error }, 'job input does not decode; skipping the call');
        return { kind: 'skip', reason: 'bad-input', error };
      }
      ctx.log.error({ err: error }, `${route.name} handler failed`);
      return { kind: 'skip', reason: 'handler-error', error };
    }
  }
}

/** A new, empty router: `router().route(0, handler).route(1, spec, handler)`. */
export function router(): JobRouter {
  return new JobRouter();
}
