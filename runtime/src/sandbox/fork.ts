// Forks: a create that starts from a sandbox (branch) or a snapshot of the same owner. Only the
// workspace (/home/agent, the one writable place that persists: the root filesystem is
// read-only) is copied, into the new sandbox's own archive directory, and restored into its new
// volume before its first start. Env, secrets and the token stay with the source: the fork gets
// the create's own env, no secrets and a fresh token, like any new sandbox.
import { copyFile, link, mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { WORKSPACE_PATH } from '../docker/container-spec.ts';
import { SizeLimitExceeded } from '../docker/driver.ts';
import { RuntimeError } from '../errors.ts';
import type { SandboxContext } from './context.ts';
import { isTerminal, type SandboxRecord, type SandboxSource } from './record.ts';
import { fetchArchive, hasRemote } from './remote-snapshots.ts';
import type { ResolvedCreate } from './request.ts';
import { archiveDirOf, fileExists, WORKSPACE_TAR } from './storage.ts';
import { allowance } from './storage-budget.ts';

/** The copied workspace, in the fork's archive directory while it is provisioned. */
const FORK_TAR = 'fork-workspace.tar';

const sameOwner = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** One answer for an id that names nothing and for another owner's: no oracle for other tenants. */
function notFound(from: NonNullable<ResolvedCreate['from']>): RuntimeError {
  const what = from.kind === 'sandbox' ? 'fromSandbox' : 'fromSnapshot';
  const thing = from.kind === 'sandbox' ? 'sandbox' : 'snapshot';
  return new RuntimeError(
    'SOURCE_NOT_FOUND',
    `${what} ${from.id}: no ${thing} of yours on this operator has this id (only your own sandboxes and snapshots can be copied; list yours with agent-sandbox list)`,
    { details: { field: what } },
  );
}

/**
 * The fork's source and image for a create that names one, checked before anything is admitted:
 * the source must be the caller's and still hold a workspace. A fork runs its source's image.
 */
export function resolveForkSource(
  ctx: SandboxContext,
  req: ResolvedCreate,
): { source: SandboxSource; image: string } | undefined {
  const from = req.from;
  if (!from) return undefined;
  const live = (r: SandboxRecord) => !isTerminal(r.state) && sameOwner(r.owner, req.owner);
  let src: SandboxRecord | undefined;
  let source: SandboxSource;
  if (from.kind === 'sandbox') {
    const r = ctx.records.get(from.id);
    src = r && live(r) ? r : undefined;
    if (!src) throw notFound(from);
    if (src.state !== 'running' && src.state !== 'stopped') {
      throw new RuntimeError(
        'SOURCE_UNAVAILABLE',
        `fromSandbox ${src.id} is ${src.state}; only a running or stopped sandbox can be branched`,
      );
    }
    source = { kind: 'sandbox', sandboxId: src.id };
  } else {
    src = ctx.records.all().find((r) => r.snapshotImageId === from.id && live(r));
    if (!src) throw notFound(from);
    source = { kind: 'snapshot', sandboxId: src.id, snapshotId: from.id };
  }
  if (req.imageNamed && req.image !== src.image) {
    throw new RuntimeError(
      'VALIDATION',
      `image: a copy runs its source's image (${src.image}); leave image empty`,
      { details: { field: 'image', reason: "a copy runs its source's image; leave image empty" } },
    );
  }
  return { source, image: src.image };
}

/**
 * Copies the source's workspace into the fork's archive directory (under the source's lock, so
 * no stop, resume, GC or delete of it runs meanwhile) and returns the archive to restore. Safe to
 * run again after a crash: a partial copy is written under a temporary name and replaced.
 */
export async function copyForkWorkspace(ctx: SandboxContext, rec: SandboxRecord): Promise<string> {
  const source = rec.source;
  if (!source) throw new RuntimeError('INTERNAL', `sandbox ${rec.id} is not a fork`);
  const from =
    source.kind === 'sandbox'
      ? { kind: 'sandbox' as const, id: source.sandboxId }
      : { kind: 'snapshot' as const, id: source.snapshotId };
  const dir = archiveDirOf(ctx, rec.id);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const out = join(dir, FORK_TAR);
  const tmp = `${out}.tmp`;
  await rm(tmp, { force: true });
  await ctx.locks.run(source.sandboxId, async () => {
    const src = ctx.records.get(source.sandboxId);
    const stillThere =
      src &&
      !isTerminal(src.state) &&
      sameOwner(src.owner, rec.owner) &&
      (source.kind === 'sandbox' || src.snapshotImageId === source.snapshotId);
    if (!src || !stillThere) throw notFound(from);
    const archived = src.snapshotArchiveDir ? join(src.snapshotArchiveDir, WORKSPACE_TAR) : undefined;
    const container = src.containerId ? await ctx.driver.exists(src.containerId) : undefined;
    if (source.kind === 'sandbox' && container && src.containerId) {
      // The live workspace, through the engine's archive API (running or stopped container).
      const allowed = await allowance(ctx, rec);
      try {
        await ctx.driver.archivePath(src.containerId, WORKSPACE_PATH, tmp, allowed.bytes);
      } catch (e) {
        await rm(tmp, { force: true });
        if (e instanceof SizeLimitExceeded) throw allowed.refuse(allowed.bytes + 1, 'copying the workspace');
        throw e;
      }
    } else if (archived && (await fileExists(archived))) {
      // The archive the snapshot (or the stop's move to warm/cold storage) wrote: linked, not read.
      await link(archived, tmp).catch(() => copyFile(archived, tmp));
    } else if (
      hasRemote(src, 'workspace') &&
      (source.kind === 'sandbox' || src.snapshotRemote?.imageId === source.snapshotId)
    ) {
      // Sent to the object store (a snapshot, or the cold tier): fetched and authenticated whole.
      await fetchArchive(ctx, src, 'workspace', tmp);
    } else {
      throw new RuntimeError(
        'SOURCE_UNAVAILABLE',
        source.kind === 'snapshot'
          ? `fromSnapshot ${source.snapshotId}: its workspace archive is gone (sandbox ${src.id} was resumed since); take a new snapshot with agent-sandbox snapshot ${src.id}`
          : `fromSandbox ${src.id} has no container or workspace archive to copy; resume it first`,
      );
    }
  });
  await rename(tmp, out);
  return out;
}

/** Removes the fork's copied workspace once its volume holds it (or the provision failed). */
export async function dropForkCopy(ctx: SandboxContext, rec: SandboxRecord): Promise<void> {
  await rm(join(archiveDirOf(ctx, rec.id), FORK_TAR), { force: true });
  await rm(join(archiveDirOf(ctx, rec.id), `${FORK_TAR}.tmp`), { force: true });
}
