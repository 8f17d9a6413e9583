// Prometheus counters of agent runs: runs by harness and outcome, and the tokens each sandbox's
// harness reported (input with cache reads, output with reasoning, cached input).
import { Counter, type Registry } from 'prom-client';

type Labels = 'sandbox_id' | 'harness';

function counter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: L[],
): Counter<L> {
  // One set per registry: a second API on the same registry (tests, restarts) shares the counters.
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<L>;
  return new Counter({ name, help, labelNames, registers: [registry] });
}

export interface RunUsageReport {
  inputTokens?: number;
  outputTokens?: number;
  cachedInputTokens?: number;
}

export class RunMetrics {
  readonly runs: Counter<'harness' | 'status'>;
  readonly inputTokens: Counter<Labels>;
  readonly outputTokens: Counter<Labels>;
  readonly cachedInputTokens: Counter<Labels>;

  constructor(registry: Registry, prefix = 'agent_sandbox_') {
    this.runs = counter(registry, `${prefix}agent_runs_total`, 'Agent runs finished, by harness and status', [
      'harness',
      'status',
    ]);
    const labels: Labels[] = ['sandbox_id', 'harness'];
    this.inputTokens = counter(
      registry,
      `${prefix}agent_input_tokens_total`,
      'Input tokens agent harnesses reported (cache reads and writes included), per sandbox and harness',
      labels,
    );
    this.outputTokens = counter(
      registry,
      `${prefix}agent_output_tokens_total`,
      'Output tokens agent harnesses reported (reasoning included), per sandbox and harness',
      labels,
    );
    this.cachedInputTokens = counter(
      registry,
      `${prefix}agent_cached_input_tokens_total`,
      'Input tokens served from the provider cache, per sandbox and harness',
      labels,
    );
  }

  /** The sandbox ids that have token series now. */
  async sandboxIds(): Promise<Set<string>> {
    const ids = new Set<string>();
    for (const c of this.#tokenCounters()) {
      for (const v of (await c.get()).values) {
        const id = v.labels.sandbox_id;
        if (typeof id === 'string') ids.add(id);
      }
    }
    return ids;
  }

  /** Removes a sandbox's series (its sandbox is deleted: a series must not outlive its tenant). */
  async forget(sandboxId: string): Promise<void> {
    for (const c of this.#tokenCounters()) {
      for (const v of (await c.get()).values) {
        if (v.labels.sandbox_id === sandboxId) c.remove(v.labels as Partial<Record<Labels, string>>);
      }
    }
  }

  #tokenCounters(): Counter<Labels>[] {
    return [this.inputTokens, this.outputTokens, this.cachedInputTokens];
  }

  /** One finished run: its status and, when it completed, the usage its result reported. */
  record(sandboxId: string, harness: string, status: string, usage: RunUsageReport | null): void {
    this.runs.inc({ harness, status });
    if (!usage) return;
    const l = { sandbox_id: sandboxId, harness };
    const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);
    this.inputTokens.inc(l, n(usage.inputTokens));
    this.outputTokens.inc(l, n(usage.outputTokens));
    this.cachedInputTokens.inc(l, n(usage.cachedInputTokens));
  }
}
