// The host memory budget (SANDBOX_MEMORY_BUDGET_MB): the memory limits of this operator's live
// sandboxes (pending, provisioning, running) together may not pass it. A create that would is
// refused at admission with MEMORY_BUDGET_EXCEEDED, before anything exists in Docker, instead of
// starting a container the host cannot back (the kernel's OOM killer or swap thrash under load).
// Limits, not usage, are summed: an idle sandbox uses far less than its limit (bench/density), and
// an operator that wants to overcommit sets a budget above the host's memory. The warm pool keeps
// only what the budget leaves after the live sandboxes (warm-pool.ts).
import { totalmem } from 'node:os';
import { RuntimeError } from '../errors.ts';
import type { SandboxContext } from './context.ts';
import type { SandboxRecord } from './record.ts';

const MiB = 1024 * 1024;
const LIVE = new Set(['pending', 'provisioning', 'running']);

/** The default budget: the host's memory less max(1 GiB, 10 %) for the engine, operator and OS. */
export function defaultMemoryBudgetMb(totalBytes = totalmem()): number {
  const total = Math.floor(totalBytes / MiB);
  return Math.max(0, total - Math.max(1024, Math.ceil(total / 10)));
}

/** The budget in effect: the configured one, or (0) the default from the host's memory. */
export function memoryBudgetMb(cfg: Pick<SandboxContext['cfg'], 'memoryBudgetMb'>): number {
  return cfg.memoryBudgetMb > 0 ? cfg.memoryBudgetMb : defaultMemoryBudgetMb();
}

/** MB of memory limits the live sandboxes hold now. */
export function committedMemoryMb(records: Iterable<SandboxRecord>): number {
  let n = 0;
  for (const r of records) if (LIVE.has(r.state)) n += r.resources.memoryMb;
  return n;
}

/** Throws MEMORY_BUDGET_EXCEEDED when `memoryMb` more would pass the budget; nothing is changed. */
export function checkMemoryBudget(ctx: Pick<SandboxContext, 'cfg' | 'records'>, memoryMb: number): void {
  const budget = memoryBudgetMb(ctx.cfg);
  const held = committedMemoryMb(ctx.records.all());
  if (held + memoryMb <= budget) return;
  throw new RuntimeError(
    'MEMORY_BUDGET_EXCEEDED',
    `this sandbox needs ${memoryMb} MB of memory and this operator's sandboxes already hold ${held} MB of its ${budget} MB host memory budget (SANDBOX_MEMORY_BUDGET_MB); ask for less memory, retry once sandboxes are deleted, or use another operator`,
    { details: { memory_mb: memoryMb, held_mb: held, budget_mb: budget } },
  );
}

/** How many warm-pool containers (the default shape) the budget has room for after the live sandboxes. */
export function poolRoomInMemoryBudget(ctx: Pick<SandboxContext, 'cfg' | 'records'>): number {
  const left = memoryBudgetMb(ctx.cfg) - committedMemoryMb(ctx.records.all());
  return Math.max(0, Math.floor(left / Math.max(1, ctx.cfg.defaultMemoryMb)));
}
