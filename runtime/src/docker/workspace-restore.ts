// Restores a workspace archive into a sandbox's volume. The sandbox's own container has a
// read-only root filesystem, where the engine refuses an archive aimed at the volume's parent,
// so a short-lived helper container (never started, no network) mounts the volume read-write
// and takes the archive instead.
import { createReadStream } from 'node:fs';
import type Docker from 'dockerode';
import { RuntimeError } from '../errors.ts';
import { type DockerDriver, dockerMessage } from './driver.ts';
import { LABEL_KIND } from './labels.ts';

export async function restoreIntoVolume(
  driver: DockerDriver,
  p: {
    image: string;
    volumeName: string;
    /** Where the volume is mounted in a sandbox; the archive's top entry is its last component. */
    mountPath: string;
    file: string;
    labels: Record<string, string>;
  },
): Promise<void> {
  let id: string | undefined;
  try {
    const c = await driver.docker.createContainer({
      Image: p.image,
      Cmd: ['true'],
      Labels: { ...p.labels, [LABEL_KIND]: 'restore' },
      HostConfig: {
        NetworkMode: 'none',
        Mounts: [{ Type: 'volume', Source: p.volumeName, Target: p.mountPath } as Docker.MountSettings],
      },
    });
    id = c.id;
    const parent = p.mountPath.replace(/\/[^/]+$/, '') || '/';
    // A loop-disk workspace is attached while the helper mounts it.
    await driver.withDisks(c, () => c.putArchive(createReadStream(p.file), { path: parent }));
  } catch (e) {
    if (e instanceof RuntimeError) throw e;
    throw new RuntimeError('DOCKER_ERROR', `docker restore into ${p.mountPath} failed: ${dockerMessage(e)}`, {
      cause: e,
    });
  } finally {
    if (id) await driver.removeContainer(id);
  }
}
