// Snapshot storage limits: what one sandbox's snapshots hold (committed layer while its image is
// in the engine, workspace.tar, image.tar) is capped per sandbox (snapshotMaxBytes) and, summed
// over all sandboxes, by an operator-wide budget (storageBudgetBytes). Checked before anything is
// written and enforced while archives stream, so an over-budget snapshot or demotion fails with
// STORAGE_LIMIT and leaves nothing behind. Usage is measured from the files and the recorded
// layer sizes each time, so it cannot drift from what is on disk.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { RuntimeError } from '../errors.ts';
import type { SandboxContext } from './context.ts';
import type { SandboxRecord } from './record.ts';

const MB = 1024 * 1024;
const mb = (n: number) => `${Math.ceil(n / MB)} MB`;

async function size(p: string): Promise<number> {
  try {
    return (await stat(p)).size;
  } catch {
    return 0;
  }
}

/** Bytes of snapshot storage this sandbox holds now. */
export async function snapshotUsage(rec: SandboxRecord): Promise<number> {
  let n = 0;
  if (rec.snapshotArchiveDir) {
    n += await size(join(rec.snapshotArchiveDir, 'workspace.tar'));
    n += await size(join(rec.snapshotArchiveDir, 'image.tar'));
  }
  // A cold sandbox's image was saved to image.tar and removed from the engine.
  if (rec.snapshotImageId && rec.tier !== 'cold') n += rec.snapshotLayerBytes ?? 0;
  return n;
}

export interface Allowance {
  /** Most bytes this sandbox's snapshot storage may total after the operation. */
  bytes: number;
  /** The error for an operation that needs `needed` bytes (or more) in total. */
  refuse(needed: number, what: string): RuntimeError;
}

/** How much the sandbox's snapshot storage may total, given the cap and what the others hold. */
export async function allowance(ctx: SandboxContext, rec: SandboxRecord): Promise<Allowance> {
  const { snapshotMaxBytes: cap, storageBudgetBytes: budget } = ctx.cfg;
  let others = 0;
  for (const r of ctx.records.all()) if (r.id !== rec.id) others += await snapshotUsage(r);
  const left = Math.max(0, budget - others);
  const bytes = Math.min(cap, left);
  return {
    bytes,
    refuse(needed, what) {
      const why =
        cap <= left
          ? `the per-sandbox snapshot cap is ${mb(cap)} (SANDBOX_SNAPSHOT_MAX_MB); free space in the workspace or ask the operator to raise it`
          : `the operator's snapshot storage budget has ${mb(left)} left of ${mb(budget)} (SANDBOX_STORAGE_BUDGET_MB); delete sandboxes you no longer need or ask the operator to raise it`;
      return new RuntimeError(
        'STORAGE_LIMIT',
        `${what} of sandbox ${rec.id} needs at least ${mb(needed)}; ${why}. Nothing was written.`,
      );
    },
  };
}
