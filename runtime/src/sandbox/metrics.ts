// Prometheus metrics of the sandbox runtime, registered on a Registry the caller owns.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export class SandboxMetrics {
  readonly active: Gauge;
  readonly peak: Gauge;
  readonly allocatedCpu: Gauge;
  readonly allocatedMemoryMb: Gauge;
  readonly jobs: Counter;
  readonly failures: Counter;
  readonly reaped: Counter<'reason'>;
  readonly gcDemotions: Counter<'from' | 'to'>;
  readonly snapshots: Counter;
  readonly snapshotsStored: Gauge<'tier'>;
  readonly phaseSeconds: Histogram<'phase'>;
  readonly warmPool: Gauge;
  #peak = 0;

  constructor(registry: Registry, prefix = 'agent_sandbox_') {
    const registers = [registry];
    this.active = new Gauge({ name: `${prefix}active`, help: 'Sandboxes running now', registers });
    this.peak = new Gauge({ name: `${prefix}peak`, help: 'Most sandboxes running at once', registers });
    this.allocatedCpu = new Gauge({
      name: `${prefix}allocated_cpu_cores`,
      help: 'CPU cores allocated to running sandboxes',
      registers,
    });
    this.allocatedMemoryMb = new Gauge({
      name: `${prefix}allocated_memory_mb`,
      help: 'Memory (MB) allocated to running sandboxes',
      registers,
    });
    this.jobs = new Counter({
      name: `${prefix}provisions_total`,
      help: 'Sandbox provisions started',
      registers,
    });
    this.failures = new Counter({
      name: `${prefix}provision_failures_total`,
      help: 'Sandbox provisions that failed',
      registers,
    });
    this.reaped = new Counter({
      name: `${prefix}reaped_total`,
      help: 'Sandboxes stopped by the reaper',
      labelNames: ['reason'],
      registers,
    });
    this.gcDemotions = new Counter({
      name: `${prefix}gc_demotions_total`,
      help: 'Storage tier moves made by GC (to=gone means removed)',
      labelNames: ['from', 'to'],
      registers,
    });
    this.snapshots = new Counter({ name: `${prefix}snapshots_total`, help: 'Snapshots taken', registers });
    this.snapshotsStored = new Gauge({
      name: `${prefix}stopped_by_tier`,
      help: 'Stopped sandboxes per storage tier',
      labelNames: ['tier'],
      registers,
    });
    this.warmPool = new Gauge({
      name: `${prefix}warm_pool_ready`,
      help: 'Warm-pool containers started, healthy and unclaimed (never counted as sandboxes)',
      registers,
    });
    this.phaseSeconds = new Histogram({
      name: `${prefix}provision_phase_seconds`,
      help: 'Time spent in each provisioning phase',
      labelNames: ['phase'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
  }

  /** Recomputes the gauges from the records (cheap; called after every state change). */
  observe(
    records: Iterable<{
      state: string;
      tier: string | null;
      resources: { cpuCores: number; memoryMb: number };
    }>,
  ) {
    let active = 0;
    let cpu = 0;
    let mem = 0;
    const tiers = { hot: 0, warm: 0, cold: 0 };
    for (const r of records) {
      if (r.state === 'running') {
        active++;
        cpu += r.resources.cpuCores;
        mem += r.resources.memoryMb;
      } else if (r.state === 'stopped' && r.tier) {
        tiers[r.tier as keyof typeof tiers]++;
      }
    }
    this.active.set(active);
    this.#peak = Math.max(this.#peak, active);
    this.peak.set(this.#peak);
    this.allocatedCpu.set(cpu);
    this.allocatedMemoryMb.set(mem);
    for (const [t, n] of Object.entries(tiers)) this.snapshotsStored.set({ tier: t }, n);
  }
}
