// The warm pool (SANDBOX_WARM_POOL): containers of the operator's default shape started before any
// create asks, through the same launch as a sandbox (same hardening, network, limits), healthy and
// holding no user data. The pool lives in this process's memory only: a pooled container has no
// record, so no owner can address it, and its bootstrap token never leaves the process. A create of
// that shape takes one (pool-claim.ts) and the pool refills in the background, one launch at a
// time. A restart forgets the pool: reconcile removes the unclaimed containers (they have no
// record) and the pool is filled afresh. Under OPERATOR_MAX_CAPACITY the pool only uses capacity
// no sandbox needs: it shrinks to zero as live sandboxes reach the maximum.

import { probeHealth } from '../docker/health.ts';
import { volumeName } from '../docker/labels.ts';
import { removeSocketDir } from '../docker/sidecar-socket.ts';
import type { SandboxContext } from './context.ts';
import { launchContainer } from './launch.ts';
import { poolRoomInMemoryBudget } from './memory-budget.ts';
import { newRecord, newSandboxId, type SandboxResources } from './record.ts';
import { type ResolvedCreate, resolveExposedPorts, resolveTimers } from './request.ts';
import type { SandboxRuntime } from './runtimes.ts';
import { startedAddress } from './sidecar-address.ts';

/** One started, healthy, unclaimed container. */
export interface PoolEntry {
  /** The sandbox id the container is named and labelled for; the claiming sandbox takes it. */
  id: string;
  /** The bootstrap token in the container's config; the claim rotates it away. */
  token: string;
  containerId: string;
  volumeName: string;
  hostPort: number | null;
  sidecarUrl: string;
  exposedHostPorts: Record<string, number>;
  image: string;
  exposedPorts: number[];
  resources: SandboxResources;
  /** The operator's default runtime (a create naming another is provisioned cold). */
  runtime: SandboxRuntime;
  createdAt: number;
}

const LIVE = new Set(['pending', 'provisioning', 'running']);

export class WarmPool {
  readonly target: number;
  readonly #ctx: SandboxContext;
  #ready: PoolEntry[] = [];
  /** Ids of containers being launched (reconcile must leave them alone too). */
  readonly #starting = new Set<string>();
  #fill: Promise<void> | undefined;
  #closed = false;

  constructor(ctx: SandboxContext, target: number) {
    this.#ctx = ctx;
    this.target = target;
  }

  /** Started, healthy, unclaimed containers right now. */
  get size(): number {
    return this.#ready.length;
  }

  /** Ids of pooled and starting containers: not leftovers, whatever reconcile sees. */
  ids(): Set<string> {
    return new Set([...this.#ready.map((e) => e.id), ...this.#starting]);
  }

  /** How many the pool should hold now: the target, less what live sandboxes leave of the maximum. */
  wanted(): number {
    const max = this.#ctx.cfg.maxSandboxes;
    if (this.#closed) return 0;
    const target = Math.min(this.target, poolRoomInMemoryBudget(this.#ctx));
    if (max <= 0) return target;
    const live = this.#ctx.records.all().filter((r) => LIVE.has(r.state)).length;
    return Math.max(0, Math.min(target, max - live));
  }

  /**
   * Takes a container of exactly the create's shape out of the pool, or undefined. Synchronous:
   * two creates can never take the same one. The caller owns it from here (claim or destroy).
   */
  take(req: ResolvedCreate): PoolEntry | undefined {
    const i = this.#ready.findIndex(
      (e) =>
        e.image === req.image &&
        e.runtime === req.runtime &&
        e.resources.cpuCores === req.cpuCores &&
        e.resources.memoryMb === req.memoryMb &&
        // A disk size the container does not enforce makes no difference to it.
        (e.resources.diskGb === req.diskGb || !(e.resources.diskEnforced || e.resources.workspaceDisk)) &&
        e.exposedPorts.join(',') === req.exposedPorts.join(','),
    );
    if (i < 0) return undefined;
    const [entry] = this.#ready.splice(i, 1);
    this.#changed();
    return entry;
  }

  /** Starts filling (or trimming) in the background; a fill already running picks the change up. */
  refill(): void {
    if (this.#closed || this.#fill) return;
    this.#fill = this.#run()
      .catch((err) =>
        this.#ctx.log.warn({ err: String(err) }, 'warm pool fill failed; retried on the next check'),
      )
      .finally(() => {
        this.#fill = undefined;
      });
  }

  /** Resolves once no fill is running (tests and benches wait on it instead of sleeping). */
  async settled(): Promise<void> {
    while (this.#fill) await this.#fill;
  }

  /**
   * Probes every pooled container's /health: one that fails is removed and replaced. Then trims
   * to wanted() and refills. Run on the pool's interval.
   */
  async check(): Promise<{ replaced: string[] }> {
    const replaced: string[] = [];
    await Promise.all(
      [...this.#ready].map(async (e) => {
        const at = startedAddress(this.#ctx, e.id, e.hostPort ?? 0);
        if (await probeHealth(at.addr, 1000)) return;
        const i = this.#ready.indexOf(e);
        if (i < 0) return; // claimed meanwhile: the claim sees the failure itself
        this.#ready.splice(i, 1);
        this.#changed();
        replaced.push(e.id);
        this.#ctx.log.warn({ poolId: e.id }, 'pooled container failed its health check; replacing it');
        await this.destroy(e);
      }),
    );
    this.refill();
    await this.settled();
    return { replaced };
  }

  /** Stops filling and removes every unclaimed container. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.settled();
    const all = this.#ready;
    this.#ready = [];
    this.#changed();
    await Promise.all(all.map((e) => this.destroy(e)));
  }

  /** Removes a pooled container with its volume (and socket directory). Best effort. */
  async destroy(e: PoolEntry): Promise<void> {
    const { driver, cfg, log } = this.#ctx;
    const warn = (err: unknown) =>
      log.warn({ poolId: e.id, err: String(err) }, 'could not remove a pooled container');
    await driver.removeContainer(e.containerId).catch(warn);
    await driver.removeVolume(e.volumeName).catch(warn);
    await removeSocketDir(cfg.sidecarSocketDir, e.id).catch(warn);
  }

  async #run(): Promise<void> {
    for (;;) {
      const want = this.wanted();
      while (this.#ready.length > want) {
        const e = this.#ready.pop();
        this.#changed();
        if (e) await this.destroy(e);
      }
      if (this.#closed || this.#ready.length >= want) return;
      const e = await this.#launch();
      if (this.#closed) {
        await this.destroy(e);
        return;
      }
      this.#ready.push(e);
      this.#changed();
    }
  }

  #changed(): void {
    this.#ctx.metrics?.warmPool.set(this.#ready.length);
  }

  async #launch(): Promise<PoolEntry> {
    const { cfg, driver } = this.#ctx;
    const now = this.#ctx.now();
    const id = newSandboxId();
    const resources: SandboxResources = {
      cpuCores: cfg.defaultCpuCores,
      memoryMb: cfg.defaultMemoryMb,
      diskGb: cfg.defaultDiskGb,
      diskEnforced: await driver.diskQuotaSupported(cfg.image),
      workspaceDisk: driver.disks ? 'loop-ext4' : null,
    };
    // Never stored: only launchContainer sees it (names, labels, limits; an empty user env).
    const rec = newRecord(
      {
        id,
        owner: 'warm-pool',
        serviceId: '',
        callId: '',
        operatorId: cfg.operatorId,
        name: '',
        state: 'provisioning',
        image: cfg.image,
        volumeName: volumeName(id),
        exposedPorts: resolveExposedPorts([], cfg),
        resources,
        timers: resolveTimers({}, cfg),
        baseEnv: {},
        metadata: {},
        runtime: cfg.runtime,
      },
      now,
    );
    this.#starting.add(id);
    try {
      const l = await launchContainer(this.#ctx, rec, { image: cfg.image, removeVolumeOnFailure: true });
      return {
        id,
        token: rec.token,
        containerId: l.containerId,
        volumeName: rec.volumeName,
        hostPort: l.hostPort,
        sidecarUrl: l.sidecarUrl,
        exposedHostPorts: l.exposedHostPorts,
        image: cfg.image,
        exposedPorts: rec.exposedPorts ?? [],
        resources,
        runtime: cfg.runtime,
        createdAt: now,
      };
    } finally {
      this.#starting.delete(id);
    }
  }
}
