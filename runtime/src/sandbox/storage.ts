// Snapshots and storage tiers of a sandbox. The workspace lives on a named volume that
// `docker commit` does not capture, so every snapshot is two parts: the committed image (the
// container's root filesystem) and a tar of /home/agent taken through the engine's archive API
// (no host bind mount). hot = stopped container + volume; warm = image + workspace.tar;
// cold = image.tar (`docker save`) + workspace.tar; gone = nothing left (record expired).
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { WORKSPACE_PATH } from '../docker/container-spec.ts';
import { SizeLimitExceeded } from '../docker/driver.ts';
import { LABEL_ID, SNAPSHOT_REPO, sandboxLabels } from '../docker/labels.ts';
import { removeSocketDir } from '../docker/sidecar-socket.ts';
import type { SandboxContext } from './context.ts';
import type { SandboxRecord } from './record.ts';
import {
  dropRemote,
  dropRemoteQuietly,
  fetchArchive,
  hasRemote,
  offloadArchives,
} from './remote-snapshots.ts';
import { sandboxContainerEnv } from './sidecar-address.ts';
import { type Allowance, allowance } from './storage-budget.ts';

export const WORKSPACE_TAR = 'workspace.tar';
export const IMAGE_TAR = 'image.tar';

export function snapshotTag(id: string): string {
  return `${SNAPSHOT_REPO}:${id}`;
}

export function archiveDirOf(ctx: SandboxContext, id: string): string {
  return join(ctx.cfg.snapshotDir, id);
}

async function fileSize(p: string): Promise<number> {
  try {
    return (await stat(p)).size;
  } catch {
    return 0;
  }
}

export async function fileExists(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

/** A streamed archive past its allowance becomes the clear STORAGE_LIMIT error. */
async function bounded<T>(a: Allowance, needed: number, what: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (e) {
    if (e instanceof SizeLimitExceeded) throw a.refuse(needed + 1, what);
    throw e;
  }
}

/**
 * Archives the workspace, then commits the container (scrubbed at once); the previous snapshot
 * image (if any, and no longer used by a container) is removed. Checked against the sandbox's
 * storage allowance first (the writable layer's size) and while the workspace streams; over it,
 * STORAGE_LIMIT and nothing is left: the temp archive is removed and no commit was made. Files are
 * written under a temp name then renamed, so a crash never leaves a half archive under the real name.
 */
export async function takeSnapshot(
  ctx: SandboxContext,
  rec: SandboxRecord,
): Promise<{ snapshotImageId: string; snapshotArchiveDir: string; snapshotLayerBytes: number }> {
  if (!rec.containerId) throw new Error(`sandbox ${rec.id} has no container to snapshot`);
  const { driver, cfg } = ctx;
  const allowed = await allowance(ctx, rec);
  const layer = await driver.containerSizeRw(rec.containerId);
  if (layer > allowed.bytes) throw allowed.refuse(layer, 'a snapshot');
  const dir = archiveDirOf(ctx, rec.id);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `${WORKSPACE_TAR}.tmp`);
  const ws = await bounded(allowed, allowed.bytes, 'a snapshot', () =>
    driver.archivePath(rec.containerId!, WORKSPACE_PATH, tmp, allowed.bytes - layer),
  );
  const env = sandboxContainerEnv(ctx, rec);
  let imageId: string;
  try {
    const committed = await driver.commit(rec.containerId, SNAPSHOT_REPO, rec.id, {
      baseImageEnv: await driver.imageEnv(rec.image),
      containerEnvKeys: Object.keys(env),
      labels: sandboxLabels(rec, 'snapshot', cfg.extraLabels),
    });
    // `docker commit` also records the container's whole config (env: token, secrets) in the image:
    // replaced at once by its scrubbed copy, so no snapshot image ever holds one, not even an older
    // one a running container still uses after a newer snapshot took the tag.
    imageId = await driver.scrubImage(committed, snapshotTag(rec.id));
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  await rename(tmp, join(dir, WORKSPACE_TAR));
  // Older snapshot images of this sandbox go (one a container still runs from stays; it is clean),
  // and so does one a crash left between a commit and its scrub.
  const older = new Set(await driver.imagesWithLabel(LABEL_ID, rec.id));
  if (rec.snapshotImageId) older.add(rec.snapshotImageId);
  for (const old of older) if (old !== imageId) await driver.removeImage(old, false);
  ctx.metrics?.snapshots.inc();
  ctx.log.debug({ sandboxId: rec.id, layer, workspace: ws }, 'snapshot taken');
  return { snapshotImageId: imageId, snapshotArchiveDir: dir, snapshotLayerBytes: layer };
}

/**
 * hot -> warm: snapshot the stopped container (always fresh: an older snapshot may predate the
 * last writes), or, when only the volume is left, archive the volume through a throwaway
 * container that is never started; then drop the container and the volume.
 */
export async function demoteHotToWarm(
  ctx: SandboxContext,
  rec: SandboxRecord,
): Promise<Partial<SandboxRecord>> {
  const { driver, cfg } = ctx;
  let snap: Partial<SandboxRecord> = {
    snapshotImageId: rec.snapshotImageId,
    snapshotArchiveDir: rec.snapshotArchiveDir,
  };
  const container = rec.containerId ? await driver.exists(rec.containerId) : undefined;
  if (container) {
    snap = await takeSnapshot(ctx, rec);
  } else if (await driver.volumeExists(rec.volumeName)) {
    const dir = archiveDirOf(ctx, rec.id);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const allowed = await allowance(ctx, rec);
    const layer = rec.snapshotImageId ? (rec.snapshotLayerBytes ?? 0) : 0;
    if (layer > allowed.bytes) throw allowed.refuse(layer, 'archiving the workspace');
    await driver.disks?.attach(rec.volumeName);
    const tmp = await driver.docker.createContainer({
      Image: rec.image,
      Cmd: ['true'],
      Labels: sandboxLabels(rec, 'snapshot', cfg.extraLabels),
      HostConfig: { Mounts: [{ Type: 'volume', Source: rec.volumeName, Target: WORKSPACE_PATH }] },
    });
    try {
      await bounded(allowed, allowed.bytes, 'archiving the workspace', () =>
        driver.archivePath(tmp.id, WORKSPACE_PATH, join(dir, `${WORKSPACE_TAR}.tmp`), allowed.bytes - layer),
      );
      await rename(join(dir, `${WORKSPACE_TAR}.tmp`), join(dir, WORKSPACE_TAR));
    } finally {
      await driver.removeContainer(tmp.id);
    }
    snap.snapshotArchiveDir = dir;
  } else {
    throw new Error('no container and no volume left to demote');
  }
  // Snapshots are scrubbed when taken; one from an older version may not be (a no-op if clean).
  if (snap.snapshotImageId && (await driver.inspectImage(snap.snapshotImageId))) {
    snap.snapshotImageId = await driver.scrubImage(snap.snapshotImageId, snapshotTag(rec.id));
  } else {
    snap.snapshotImageId = null;
  }
  if (rec.containerId) await driver.removeContainer(rec.containerId);
  await driver.removeVolume(rec.volumeName);
  // No container is left to bind it; a resume makes it again.
  await removeSocketDir(ctx.cfg.sidecarSocketDir, rec.id);
  return { ...snap, containerId: null, tier: 'warm', tierSince: ctx.now() };
}

/**
 * warm -> cold: `docker save` the snapshot image into the archive dir, then remove the image. With
 * an object store (SNAPSHOT_S3_*) both archives are then sent there and the local copies removed;
 * if the upload fails the sandbox stays warm (image in the engine, workspace.tar on disk) and the
 * next GC tick tries again.
 */
export async function demoteWarmToCold(
  ctx: SandboxContext,
  rec: SandboxRecord,
): Promise<Partial<SandboxRecord>> {
  if (!rec.snapshotArchiveDir) throw new Error('warm sandbox without a workspace archive');
  const wsFile = join(rec.snapshotArchiveDir, WORKSPACE_TAR);
  const localWs = (await fileExists(wsFile)) ? wsFile : undefined;
  // Only the workspace was kept (the container had vanished): nothing to save.
  if (!rec.snapshotImageId) {
    if (!ctx.objects || !localWs) return { tier: 'cold', tierSince: ctx.now() };
    const snapshotRemote = await offloadArchives(ctx, rec, { workspace: localWs }, null);
    await rm(wsFile, { force: true });
    return { tier: 'cold', tierSince: ctx.now(), snapshotRemote };
  }
  const file = join(rec.snapshotArchiveDir, IMAGE_TAR);
  // image.tar holds every layer (the base image's too); the image's own layer leaves the engine.
  const allowed = await allowance(ctx, rec);
  const ws = await fileSize(wsFile);
  const need = ws + (await ctx.driver.imageSize(rec.snapshotImageId));
  if (need > allowed.bytes) throw allowed.refuse(need, 'moving to cold storage');
  // Scrubbed on the way to disk (no container env in the archive); loads back under this tag.
  await bounded(allowed, allowed.bytes, 'moving to cold storage', () =>
    ctx.driver.saveImage(rec.snapshotImageId!, `${file}.tmp`, snapshotTag(rec.id), allowed.bytes - ws),
  );
  await rename(`${file}.tmp`, file);
  let snapshotRemote = rec.snapshotRemote ?? null;
  if (ctx.objects) {
    try {
      snapshotRemote = await offloadArchives(
        ctx,
        rec,
        { workspace: localWs, image: file },
        rec.snapshotImageId,
      );
    } catch (e) {
      // Still warm: the image is in the engine and workspace.tar on disk; only the save goes.
      await rm(file, { force: true });
      throw e;
    }
    await rm(file, { force: true });
    await rm(wsFile, { force: true });
  }
  await ctx.driver.removeImage(rec.snapshotImageId);
  return { tier: 'cold', tierSince: ctx.now(), snapshotRemote };
}

/** Removes every artifact a sandbox may have: container, volume, snapshot images, archives. */
export async function purgeArtifacts(ctx: SandboxContext, rec: SandboxRecord): Promise<void> {
  const { driver } = ctx;
  // First: if the object store fails, nothing else is gone yet and the delete can be retried.
  await dropRemote(ctx, rec);
  if (rec.containerId) await driver.removeContainer(rec.containerId);
  await driver.removeVolume(rec.volumeName);
  const images = new Set(await driver.imagesWithLabel(LABEL_ID, rec.id));
  if (rec.snapshotImageId) images.add(rec.snapshotImageId);
  for (const img of images) await driver.removeImage(img);
  await rm(archiveDirOf(ctx, rec.id), { recursive: true, force: true });
  await removeSocketDir(ctx.cfg.sidecarSocketDir, rec.id);
}

/**
 * What a resume starts from: the snapshot image if it is in the engine (loading it from a cold
 * archive first), else the base image; the existing volume if there is one (newest data), else
 * the workspace archive.
 */
export async function restoreSource(
  ctx: SandboxContext,
  rec: SandboxRecord,
): Promise<{
  image: string;
  snapshotImageId: string | null;
  workspaceTar: string | undefined;
  volumeExists: boolean;
}> {
  const { driver } = ctx;
  const dir = rec.snapshotArchiveDir ?? archiveDirOf(ctx, rec.id);
  // The workspace first: it is the small one, so a bad object is refused before an image load.
  const volumeExists = await driver.volumeExists(rec.volumeName);
  let workspaceTar: string | undefined;
  if (!volumeExists) {
    const tar = join(dir, WORKSPACE_TAR);
    if (!(await fileExists(tar)) && hasRemote(rec, 'workspace')) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await fetchArchive(ctx, rec, 'workspace', tar);
    }
    if (await fileExists(tar)) workspaceTar = tar;
  }
  let image = rec.image;
  let snapshotImageId = rec.snapshotImageId;
  if (snapshotImageId) {
    if (!(await driver.inspectImage(snapshotImageId))) {
      const tar = join(dir, IMAGE_TAR);
      // Cold in the object store: fetched (and authenticated) first, then loaded like a local one.
      if (!(await fileExists(tar)) && hasRemote(rec, 'image')) {
        await mkdir(dir, { recursive: true, mode: 0o700 });
        await fetchArchive(ctx, rec, 'image', tar);
      }
      // The scrubbed archive has a new config digest, so the image comes back under a new id.
      if (await fileExists(tar)) {
        await driver.loadImage(tar);
        snapshotImageId = (await driver.inspectImage(snapshotTag(rec.id)))?.id ?? null;
      }
    }
    if (snapshotImageId && (await driver.inspectImage(snapshotImageId))) image = snapshotImageId;
    else snapshotImageId = null;
  }
  return { image, snapshotImageId, workspaceTar, volumeExists };
}

/**
 * After a successful resume: archives are stale (the live volume is the truth), drop them, the
 * object store's too (what could not be deleted stays named in the returned snapshotRemote).
 */
export async function dropArchives(
  ctx: SandboxContext,
  rec: SandboxRecord,
): Promise<Pick<SandboxRecord, 'snapshotRemote'>> {
  if (rec.snapshotArchiveDir) {
    await rm(join(rec.snapshotArchiveDir, IMAGE_TAR), { force: true });
    await rm(join(rec.snapshotArchiveDir, WORKSPACE_TAR), { force: true });
  }
  return { snapshotRemote: await dropRemoteQuietly(ctx, rec) };
}

/** The tier a sandbox without its container is in: hot (volume left), warm, cold, or none. */
export async function hasSnapshot(
  ctx: SandboxContext,
  rec: SandboxRecord,
): Promise<'hot' | 'warm' | 'cold' | undefined> {
  if (await ctx.driver.volumeExists(rec.volumeName)) return 'hot';
  const dir = rec.snapshotArchiveDir;
  const localWs = dir ? await fileExists(join(dir, WORKSPACE_TAR)) : false;
  if (!localWs && !hasRemote(rec, 'workspace')) return undefined;
  if (rec.snapshotImageId && (await ctx.driver.inspectImage(rec.snapshotImageId))) return 'warm';
  if ((dir && (await fileExists(join(dir, IMAGE_TAR)))) || hasRemote(rec, 'image')) return 'cold';
  // Workspace files survive; the root filesystem falls back to the base image.
  return 'warm';
}
