// Token usage of a run, read from the sidecar's `result` event (and from step frames, where a
// harness reports them): counts are non-negative integers; `inputTokens` counts cache reads and
// writes and `outputTokens` counts reasoning, so the subsets can never exceed them. A report that
// breaks this is not a count we can state: it is left out (absent), never repaired or guessed.
import type { RunUsage } from './run-log.ts';

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** The usage in a sidecar report, or null when it is missing or not a valid count. */
export function readUsage(raw: unknown): RunUsage | null {
  if (!raw || typeof raw !== 'object') return null;
  const u = raw as Record<string, unknown>;
  if (!isCount(u.inputTokens) || !isCount(u.outputTokens)) return null;
  const out: RunUsage = { inputTokens: u.inputTokens, outputTokens: u.outputTokens };
  for (const [k, whole] of [
    ['cachedInputTokens', 'inputTokens'],
    ['reasoningTokens', 'outputTokens'],
  ] as const) {
    const v = u[k];
    if (v === undefined || v === null) continue;
    if (!isCount(v) || v > out[whole]) return null;
    out[k] = v;
  }
  return out;
}

/**
 * A run's running total over step frames: each step (a `message.part.updated` whose part carries
 * `usage`) counted once by its part id. After a step without valid counts no total is known, so
 * later steps carry none.
 */
export class StepUsage {
  private total: RunUsage = { inputTokens: 0, outputTokens: 0 };
  private readonly seen = new Set<string>();
  private broken = false;

  /** The cumulative total after this step, or undefined when the frame is no step or no total is known. */
  add(part: unknown): RunUsage | undefined {
    if (!part || typeof part !== 'object' || !('usage' in part)) return undefined;
    if (this.broken) return undefined;
    const p = part as { id?: unknown; usage?: unknown };
    const u = readUsage(p.usage);
    if (!u) {
      this.broken = true;
      return undefined;
    }
    const id = typeof p.id === 'string' ? p.id : undefined;
    if (id && this.seen.has(id)) return { ...this.total };
    if (id) this.seen.add(id);
    const t = this.total;
    t.inputTokens += u.inputTokens;
    t.outputTokens += u.outputTokens;
    if (u.cachedInputTokens !== undefined)
      t.cachedInputTokens = (t.cachedInputTokens ?? 0) + u.cachedInputTokens;
    if (u.reasoningTokens !== undefined) t.reasoningTokens = (t.reasoningTokens ?? 0) + u.reasoningTokens;
    return { ...t };
  }
}
