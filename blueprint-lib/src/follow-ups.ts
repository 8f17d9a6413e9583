// What the operator does after a job, and in the background, so the chain's books match its own:
// - a call Tangle completed with another operator's result is settled on the blueprint by the
//   chosen operator (settleCall), so the owner's sandbox is recorded and its slot counted once;
// - a create it gave up on gives back its reservation (releaseReservation);
// - a create whose result the blueprint ignored (its reservation was released after the timeout
//   while it was built) is undone: its sandbox is deleted, the provision says why;
// - a sandbox stopped for good (GC'd to `expired`, or `failed`) is reported gone, freeing its slot;
//   an instance whose sandbox is gone or whose service ended is reported deprovisioned;
// - cloud: once the service is terminated, its sandboxes are deleted (nobody can reach them).
import type { StoreCollection } from '@agent-sandbox/runtime';
import type { Logger } from 'pino';
import type { Hex } from 'viem';
import type { CallRef } from './chain.ts';
import type { ChainWriter } from './chain-writes.ts';
import { JOB_SANDBOX_CREATE } from './jobs.ts';

export interface FinishedJob {
  event: { serviceId: bigint; callId: bigint; jobIndex: number; blockNumber?: bigint };
  outcome: 'submitted' | 'already-done' | 'failed' | 'aborted' | 'vanished' | 'skipped';
  skipReason?: string;
  output?: Hex;
}

/** What afterJob asks of the create handler once a create's result is on chain (sandboxHandlers). */
export interface CreateResults {
  /** Undoes the create when the blueprint ignored its result (released reservation). */
  afterResult(call: CallRef, output: Hex): Promise<boolean>;
}

/** The runner's afterJob hook for this blueprint. Failures are logged, never thrown. */
export function afterJob(writer: ChainWriter, log: Logger, creates?: CreateResults) {
  return async (done: FinishedJob): Promise<void> => {
    await followUp(writer, log, done);
    const { event, outcome } = done;
    if (
      !creates ||
      event.jobIndex !== JOB_SANDBOX_CREATE ||
      !done.output ||
      (outcome !== 'submitted' && outcome !== 'already-done')
    )
      return;
    try {
      await creates.afterResult({ ...event, blockNumber: event.blockNumber ?? 0n }, done.output);
    } catch (err) {
      log.error(
        { serviceId: `${event.serviceId}`, callId: `${event.callId}`, err },
        'checking that the blueprint recorded this create failed',
      );
    }
  };
}

async function followUp(writer: ChainWriter, log: Logger, done: FinishedJob): Promise<void> {
  const { event, outcome } = done;
  const ids = { serviceId: `${event.serviceId}`, callId: `${event.callId}` };
  try {
    if (outcome === 'already-done' && done.output) {
      // Another operator's result completed the call on Tangle; the blueprint ignored it if we
      // were the chosen one, so record ours there (a no-op when our own result counted).
      const r = await writer.settleCall(event.serviceId, event.callId, done.output);
      if (r === 'sent')
        log.info(ids, 'call completed by another operator; our outcome settled on the blueprint');
    } else if (
      event.jobIndex === JOB_SANDBOX_CREATE &&
      (outcome === 'failed' || (outcome === 'skipped' && done.skipReason === 'handler-error'))
    ) {
      const r = await writer.releaseReservation(event.serviceId, event.callId);
      if (r === 'sent') log.warn(ids, 'gave up on a create; its reserved slot is released');
    }
  } catch (err) {
    log.error({ ...ids, err }, 'follow-up on the blueprint failed');
  }
}

/** The sandbox facts the reporter reads (SandboxManager.list() fits). */
export interface GoneSource {
  list(): Array<{ id: string; serviceId: string; state: string }>;
  delete(id: string): Promise<unknown>;
}

export class GoneReporter {
  readonly #reported: StoreCollection<{ at: number; outcome: string }>;

  constructor(
    private readonly o: {
      sandboxes: GoneSource;
      store: { collection<T>(name: string): StoreCollection<T> };
      writer: ChainWriter;
      serviceId: bigint;
      mode: 'cloud' | 'instance' | 'tee-instance';
      log: Logger;
      /** The service is still active (false once it ended). Cloud: its sandboxes are then deleted. */
      serviceActive?: () => Promise<boolean>;
      instanceSandboxId?: () => string | undefined;
    },
  ) {
    this.#reported = o.store.collection('reported-gone');
  }

  /** Reports what is newly gone; returns the sandbox ids (or `instance`) reported in this tick. */
  async tick(): Promise<string[]> {
    const { sandboxes, writer, serviceId, log } = this.o;
    const done: string[] = [];
    if (this.o.mode !== 'cloud') {
      const id = this.o.instanceSandboxId?.();
      const gone = id !== undefined && !sandboxes.list().some((r) => r.id === id && isLive(r.state));
      const ended = this.o.serviceActive ? !(await this.o.serviceActive()) : false;
      const key = `instance:${serviceId}`;
      if ((gone || ended) && !(await this.#reported.get(key))) {
        const outcome = await writer.reportDeprovisioned(serviceId);
        await this.#reported.put(key, { at: Date.now(), outcome });
        log.info({ serviceId: `${serviceId}`, gone, ended, outcome }, 'instance reported deprovisioned');
        done.push('instance');
      }
      return done;
    }
    const live = sandboxes.list().filter((r) => r.serviceId === `${serviceId}` && r.state !== 'deleted');
    if (live.length > 0 && this.o.serviceActive && !(await this.o.serviceActive())) {
      for (const r of live) {
        try {
          await sandboxes.delete(r.id);
          log.info({ sandboxId: r.id, serviceId: `${serviceId}` }, 'service terminated; its sandbox deleted');
          done.push(r.id);
        } catch (err) {
          log.warn(
            { sandboxId: r.id, err },
            'service terminated; deleting its sandbox failed, retrying next tick',
          );
        }
      }
      return done;
    }
    for (const r of sandboxes.list()) {
      if (r.serviceId !== `${serviceId}` || (r.state !== 'expired' && r.state !== 'failed')) continue;
      if (await this.#reported.get(r.id)) continue;
      const outcome = await writer.reportSandboxGone(r.id);
      await this.#reported.put(r.id, { at: Date.now(), outcome });
      log.info(
        { sandboxId: r.id, state: r.state, outcome },
        'sandbox stopped for good; reported gone on chain',
      );
      done.push(r.id);
    }
    return done;
  }
}

const isLive = (state: string) => state !== 'expired' && state !== 'failed' && state !== 'deleted';
