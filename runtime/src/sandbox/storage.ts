// Snapshots and storage tiers of a sandbox. The workspace lives on a named volume that
// `docker commit` does not capture, so every snapshot is two parts: the committed image (the
// container's root filesystem) and a tar of /home/agent taken through the engine's archive API
// (no host bind mount). hot = stopped container + volume; warm = image + workspace.tar;
// cold = image.tar (`docker save`) + workspace.tar; gone = nothing left (record expired).
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { WORKSPACE_PATH } from '../docker/container-spec.ts';
import { LABEL_ID, SNAPSHOT_REPO, sandboxLabels } from '../docker/labels.ts';
import { removeSocketDir } from '../docker/sidecar-socket.ts';
import type { SandboxContext } from './context.ts';
import type { SandboxRecord } from './record.ts';
import { sandboxContainerEnv } from './sidecar-address.ts';

export const WORKSPACE_TAR = 'workspace.tar';
export const IMAGE_TAR = 'image.tar';

export function snapshotTag(id: string): string {
  return `${SNAPSHOT_REPO}:${id}`;
}

export function archiveDirOf(ctx: SandboxContext, id: string): string {
  return join(ctx.cfg.snapshotDir, id);
}

export async function fileExists(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

/**
 * Commits the container and archives its workspace; the previous snapshot image (if any, and no
 * longer used by a container) is removed. Files are written under a temp name then renamed, so a
 * crash never leaves a half archive under the real name.
 */
export async function takeSnapshot(
  ctx: SandboxContext,
  rec: SandboxRecord,
): Promise<{ snapshotImageId: string; snapshotArchiveDir: string }> {
  if (!rec.containerId) throw new Error(`sandbox ${rec.id} has no container to snapshot`);
  const { driver, cfg } = ctx;
  const dir = archiveDirOf(ctx, rec.id);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const env = sandboxContainerEnv(ctx, rec);
  const imageId = await driver.commit(rec.containerId, SNAPSHOT_REPO, rec.id, {
    baseImageEnv: await driver.imageEnv(rec.image),
    containerEnvKeys: Object.keys(env),
    labels: sandboxLabels(rec, 'snapshot', cfg.extraLabels),
  });
  const tmp = join(dir, `${WORKSPACE_TAR}.tmp`);
  await driver.archivePath(rec.containerId, WORKSPACE_PATH, tmp);
  await rename(tmp, join(dir, WORKSPACE_TAR));
  if (rec.snapshotImageId && rec.snapshotImageId !== imageId)
    await driver.removeImage(rec.snapshotImageId, false);
  ctx.metrics?.snapshots.inc();
  return { snapshotImageId: imageId, snapshotArchiveDir: dir };
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
  let snap = { snapshotImageId: rec.snapshotImageId, snapshotArchiveDir: rec.snapshotArchiveDir };
  const container = rec.containerId ? await driver.exists(rec.containerId) : undefined;
  if (container) {
    snap = await takeSnapshot(ctx, rec);
  } else if (await driver.volumeExists(rec.volumeName)) {
    const dir = archiveDirOf(ctx, rec.id);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = await driver.docker.createContainer({
      Image: rec.image,
      Cmd: ['true'],
      Labels: sandboxLabels(rec, 'snapshot', cfg.extraLabels),
      HostConfig: { Mounts: [{ Type: 'volume', Source: rec.volumeName, Target: WORKSPACE_PATH }] },
    });
    try {
      await driver.archivePath(tmp.id, WORKSPACE_PATH, join(dir, `${WORKSPACE_TAR}.tmp`));
      await rename(join(dir, `${WORKSPACE_TAR}.tmp`), join(dir, WORKSPACE_TAR));
    } finally {
      await driver.removeContainer(tmp.id);
    }
    snap.snapshotArchiveDir = dir;
  } else {
    throw new Error('no container and no volume left to demote');
  }
  // The committed image still holds the container's env in Docker's image store; once the
  // container is gone nothing else should, so the warm image is replaced by its scrubbed copy.
  if (snap.snapshotImageId && (await driver.inspectImage(snap.snapshotImageId))) {
    snap.snapshotImageId = await driver.scrubImageInEngine(snap.snapshotImageId, snapshotTag(rec.id));
  } else {
    snap.snapshotImageId = null;
  }
  if (rec.containerId) await driver.removeContainer(rec.containerId);
  await driver.removeVolume(rec.volumeName);
  // No container is left to bind it; a resume makes it again.
  await removeSocketDir(ctx.cfg.sidecarSocketDir, rec.id);
  return { ...snap, containerId: null, tier: 'warm', tierSince: ctx.now() };
}

/** warm -> cold: `docker save` the snapshot image into the archive dir, then remove the image. */
export async function demoteWarmToCold(
  ctx: SandboxContext,
  rec: SandboxRecord,
): Promise<Partial<SandboxRecord>> {
  if (!rec.snapshotArchiveDir) throw new Error('warm sandbox without a workspace archive');
  // Only the workspace was kept (the container had vanished): nothing to save.
  if (!rec.snapshotImageId) return { tier: 'cold', tierSince: ctx.now() };
  const file = join(rec.snapshotArchiveDir, IMAGE_TAR);
  // Scrubbed on the way to disk (no container env in the archive); loads back under this tag.
  await ctx.driver.saveImage(rec.snapshotImageId, `${file}.tmp`, snapshotTag(rec.id));
  await rename(`${file}.tmp`, file);
  await ctx.driver.removeImage(rec.snapshotImageId);
  return { tier: 'cold', tierSince: ctx.now() };
}

/** Removes every artifact a sandbox may have: container, volume, snapshot images, archives. */
export async function purgeArtifacts(ctx: SandboxContext, rec: SandboxRecord): Promise<void> {
  const { driver } = ctx;
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
  let image = rec.image;
  let snapshotImageId = rec.snapshotImageId;
  if (snapshotImageId) {
    if (!(await driver.inspectImage(snapshotImageId)) && rec.snapshotArchiveDir) {
      const tar = join(rec.snapshotArchiveDir, IMAGE_TAR);
      // The scrubbed archive has a new config digest, so the image comes back under a new id.
      if (await fileExists(tar)) {
        await driver.loadImage(tar);
        snapshotImageId = (await driver.inspectImage(snapshotTag(rec.id)))?.id ?? null;
      }
    }
    if (snapshotImageId && (await driver.inspectImage(snapshotImageId))) image = snapshotImageId;
    else snapshotImageId = null;
  }
  const volumeExists = await driver.volumeExists(rec.volumeName);
  let workspaceTar: string | undefined;
  if (!volumeExists && rec.snapshotArchiveDir) {
    const tar = join(rec.snapshotArchiveDir, WORKSPACE_TAR);
    if (await fileExists(tar)) workspaceTar = tar;
  }
  return { image, snapshotImageId, workspaceTar, volumeExists };
}

/** After a successful resume: archives are stale (the live volume is the truth), drop them. */
export async function dropArchives(rec: SandboxRecord): Promise<void> {
  if (!rec.snapshotArchiveDir) return;
  await rm(join(rec.snapshotArchiveDir, IMAGE_TAR), { force: true });
  await rm(join(rec.snapshotArchiveDir, WORKSPACE_TAR), { force: true });
}

/** The tier a sandbox without its container is in: hot (volume left), warm, cold, or none. */
export async function hasSnapshot(
  ctx: SandboxContext,
  rec: SandboxRecord,
): Promise<'hot' | 'warm' | 'cold' | undefined> {
  if (await ctx.driver.volumeExists(rec.volumeName)) return 'hot';
  if (!rec.snapshotArchiveDir || !(await fileExists(join(rec.snapshotArchiveDir, WORKSPACE_TAR))))
    return undefined;
  if (rec.snapshotImageId && (await ctx.driver.inspectImage(rec.snapshotImageId))) return 'warm';
  if (await fileExists(join(rec.snapshotArchiveDir, IMAGE_TAR))) return 'cold';
  // Workspace files survive; the root filesystem falls back to the base image.
  return 'warm';
}
