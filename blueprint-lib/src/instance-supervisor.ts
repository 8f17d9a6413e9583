// The instance's keeper (instance and tee-instance modes): one loop that makes the runtime and the
// chain agree with the service's life. While the service is active and this operator serves it:
// the instance sandbox exists and runs (provisioned, resumed after an engine restart, restarted
// when its container died), and is reported with reportProvisioned. A failed attempt is retried
// with exponential backoff under a new call id, the failure shown by status() (the API's /health),
// and never stops the operator from starting. Once the service ended (or dropped this operator):
// the sandbox is deleted and reportDeprovisioned sent. Ticks run one at a time.

import { agentSandboxBlueprintAbi, iTangleAbi } from '@agent-sandbox/contracts';
import { type Address, createPublicClient, http } from 'viem';
import type { RuntimeCreateParams, SandboxFacts } from './deps.ts';
import {
  type InstanceOptions,
  type InstanceRecords,
  instanceSandboxOf,
  provisionInstance,
  reportProvisioned,
} from './instance.ts';

/** The runtime calls the keeper makes (SandboxManager, through runtime-adapters' instanceRuntime). */
export interface InstanceRuntime extends InstanceRecords {
  create(params: RuntimeCreateParams): Promise<SandboxFacts>;
  delete(id: string): Promise<unknown>;
  /**
   * Under the sandbox's lock: a record that says running while its container is not (it died, or
   * the engine restarted) is stopped and resumed; one stopped by the engine is resumed; a stop by
   * its owner (or by its own timers, when the service config set them) is left alone.
   */
  restartIfEngineStopped(id: string): Promise<{ state: string }>;
}

export interface InstanceStatus {
  /** waiting: the service is not active yet; ended: the service ended and the sandbox is gone. */
  state: 'provisioning' | 'ready' | 'failed' | 'waiting' | 'ended';
  sandboxId: string | null;
  /** Failed attempts in a row (0 once one succeeds). */
  failures: number;
  lastError: string | null;
  /** Epoch ms of the next retry while failed. */
  nextAttemptAt: number | null;
  reportedOnChain: boolean;
}

export interface SupervisorOptions extends Omit<InstanceOptions, 'sandboxes' | 'attempt'> {
  tangle: Address;
  runtime: InstanceRuntime;
  /** reportDeprovisioned (BlueprintWriter's: a "nothing to do" revert is not an error). */
  reportDeprovisioned(serviceId: bigint): Promise<unknown>;
  /** How often the chain and the sandbox are checked. */
  checkIntervalMs: number;
  /** Backoff after a failed attempt: doubles from checkIntervalMs up to this. */
  maxBackoffMs: number;
  now?: () => number;
}

export class InstanceSupervisor {
  readonly #o: SupervisorOptions;
  readonly #now: () => number;
  #status: InstanceStatus = {
    state: 'provisioning',
    sandboxId: null,
    failures: 0,
    lastError: null,
    nextAttemptAt: null,
    reportedOnChain: false,
  };
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(o: SupervisorOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
  }

  status(): InstanceStatus {
    return { ...this.#status };
  }

  /** The service's sandbox on this operator (from the store: also right before the first tick). */
  sandboxId(): string | undefined {
    return instanceSandboxOf(this.#o.runtime, this.#o.serviceId)?.id;
  }

  /** Runs one tick (awaited: a healthy instance is ready before the operator is), then the loop. */
  async start(): Promise<void> {
    await this.tick();
    if (this.#stopped) return;
    this.#timer = setInterval(() => void this.tick(), this.#o.checkIntervalMs);
    this.#timer.unref();
  }

  /** Stops the loop and waits for a tick in flight. The sandbox keeps running (a restart finds it). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#running;
  }

  /** One pass; never throws (a failure is recorded in status() and retried after the backoff). */
  tick(): Promise<void> {
    if (this.#running) return this.#running;
    const { nextAttemptAt } = this.#status;
    if (this.#status.state === 'ended' || (nextAttemptAt !== null && this.#now() < nextAttemptAt))
      return Promise.resolve();
    this.#running = this.#pass()
      .catch((err: unknown) => this.#failed(err))
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  async #pass(): Promise<void> {
    const o = this.#o;
    const pub = createPublicClient({ transport: http(o.httpRpcUrl) });
    const me = o.account.address;
    const [active, serving, provisioned] = await Promise.all([
      pub.readContract({
        address: o.tangle,
        abi: iTangleAbi,
        functionName: 'isServiceActive',
        args: [o.serviceId],
      }),
      pub.readContract({
        address: o.tangle,
        abi: iTangleAbi,
        functionName: 'isServiceOperator',
        args: [o.serviceId, me],
      }),
      pub.readContract({
        address: o.blueprint,
        abi: agentSandboxBlueprintAbi,
        functionName: 'isOperatorProvisioned',
        args: [o.serviceId, me],
      }),
    ]);
    const current = instanceSandboxOf(o.runtime, o.serviceId);
    if (!active || !serving) {
      if (!current && !provisioned) {
        // Nothing here and nothing on chain: not active yet (keep checking), or ended long ago.
        this.#set({ state: 'waiting', sandboxId: null, reportedOnChain: false });
        return;
      }
      return this.#deprovision(current?.id, provisioned, active ? 'left the service' : 'service ended');
    }
    const sandbox = await this.#ensureRunning(current);
    // A check of the instance that is already ready keeps it ready while it reads the chain
    // (/health polls this status; on a slow RPC a flip to provisioning is seen every tick).
    if (this.#status.state !== 'ready' || this.#status.sandboxId !== sandbox.id)
      this.#set({ state: 'provisioning', sandboxId: sandbox.id });
    // A new attempt has reported itself (provisionInstance); an existing sandbox not yet on chain
    // (the report failed, or the operator stopped before it) is reported here.
    const onChain = await pub.readContract({
      address: o.blueprint,
      abi: agentSandboxBlueprintAbi,
      functionName: 'isOperatorProvisioned',
      args: [o.serviceId, me],
    });
    if (!onChain) await reportProvisioned(o, sandbox.id);
    this.#set({
      state: 'ready',
      sandboxId: sandbox.id,
      failures: 0,
      lastError: null,
      nextAttemptAt: null,
      reportedOnChain: true,
    });
  }

  /** The current sandbox running (resumed or restarted when its container went), or a new attempt. */
  async #ensureRunning(current: ReturnType<typeof instanceSandboxOf>): Promise<{ id: string }> {
    const { runtime, log } = this.#o;
    if (!current || current.state === 'pending' || current.state === 'provisioning') {
      // A new attempt after a failed one; the same attempt when a restart cut it short.
      const attempt = current?.attempt ?? this.#nextAttempt();
      const r = await provisionInstance({ ...this.#o, sandboxes: runtime, attempt });
      return r.sandbox;
    }
    if (current.state === 'running' || current.state === 'stopped') {
      // Under the sandbox's lock in the runtime: never races a secrets recreate or a user resume.
      const after = await runtime.restartIfEngineStopped(current.id);
      if (current.state === 'stopped' && after.state === 'running')
        log.info({ sandboxId: current.id }, 'resumed the instance sandbox the engine had stopped');
    }
    return current;
  }

  #nextAttempt(): number {
    let n = 0;
    for (const r of this.#o.runtime.list({ serviceId: `${this.#o.serviceId}` })) {
      const m = /^instance-\d+(?:-(\d+))?$/.exec(r.callId);
      if (m) n = Math.max(n, m[1] ? Number(m[1]) : 1);
    }
    return n + 1;
  }

  async #deprovision(id: string | undefined, provisioned: boolean, why: string): Promise<void> {
    const { runtime, log, serviceId } = this.#o;
    if (id) {
      await runtime.delete(id);
      log.info({ sandboxId: id, why }, 'instance sandbox deleted');
    }
    if (provisioned) {
      await this.#o.reportDeprovisioned(serviceId);
      log.info({ serviceId: `${serviceId}`, why }, 'instance reported deprovisioned on chain');
    }
    this.#set({
      state: 'ended',
      sandboxId: null,
      failures: 0,
      lastError: null,
      nextAttemptAt: null,
      reportedOnChain: false,
    });
  }

  #failed(err: unknown): void {
    const failures = this.#status.failures + 1;
    const delay = Math.min(this.#o.maxBackoffMs, this.#o.checkIntervalMs * 2 ** (failures - 1));
    // viem's shortMessage is the one line that matters (the full message repeats the call).
    const e = err as { shortMessage?: unknown; message?: unknown };
    const message = String(typeof e?.shortMessage === 'string' ? e.shortMessage : (e?.message ?? err));
    this.#set({ state: 'failed', failures, lastError: message, nextAttemptAt: this.#now() + delay });
    this.#o.log.error(
      { err: message, failures, retryInMs: delay },
      'instance sandbox not ready; retrying after the backoff',
    );
  }

  #set(p: Partial<InstanceStatus>): void {
    this.#status = { ...this.#status, ...p };
  }
}
