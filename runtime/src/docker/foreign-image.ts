// What a registry image (one that does not carry our sidecar) may not do, checked before any
// sandbox of it is made: its config is read from the engine and the paths the sandbox mounts over
// are looked up in its filesystem through a never-started container (nothing of the image runs).
// Refused, each with IMAGE_REFUSED and what to change:
// - a VOLUME: the engine would make that part of the read-only root filesystem writable, filled
//   with the image's files (an agent-owned /etc would let it plant a preload for the next start);
// - a symlink at a path the sandbox mounts on or under (/home, /home/agent, /tmp, /var, /var/tmp,
//   /run, /etc, the sidecar's /.agent-sandbox): a mount would land where the link points, e.g.
//   the workspace over /etc, or the sidecar inside the agent's workspace;
// - /etc/ld.so.preload: even our own loader reads it, so the root sidecar would load its library;
// - labels in our `agent-sandbox.` namespace (reconcile and clean-up select containers by them);
// - another platform than linux/amd64 (the sidecar kit is x86-64).
// The image's ENTRYPOINT, CMD, USER, WORKDIR, HEALTHCHECK, STOPSIGNAL and ENV are overridden by
// the container spec (container-spec.ts, mountedSidecar).
import type Docker from 'dockerode';
import { RuntimeError } from '../errors.ts';
import { dockerStatus } from './docker-errors.ts';
import { LABEL_KIND, LABEL_MANAGED_BY, MANAGED_BY_VALUE } from './labels.ts';
import { KIT_MOUNT, KIT_NODE_SHARE } from './sidecar-kit.ts';

/** Paths that must be real directories (or absent) in the image; checked top-down. */
const NO_LINK_PATHS = [
  '/etc',
  '/home',
  '/home/agent',
  '/tmp',
  '/var',
  '/var/tmp',
  '/run',
  '/run/sidecar',
  KIT_MOUNT,
  KIT_NODE_SHARE,
];
/** Paths the image must not have. */
const ABSENT_PATHS = ['/etc/ld.so.preload'];
/** Programs the sidecar starts as the agent (exec and agents: bash; terminals: python3). */
const NEEDED = ['/bin/bash'];

const MODE_SYMLINK = 2 ** 27;

export interface ForeignImageFacts {
  /** The image's own ENV (KEY=VALUE), handed to the agent's processes, never to the sidecar. */
  env: string[];
}

export async function checkForeignImage(docker: Docker, ref: string): Promise<ForeignImageFacts> {
  let info: Docker.ImageInspectInfo;
  try {
    info = await docker.getImage(ref).inspect();
  } catch (e) {
    throw new RuntimeError('IMAGE_NOT_FOUND', `image ${ref} is not in this operator's engine`, { cause: e });
  }
  const refuse = (why: string) =>
    new RuntimeError('IMAGE_REFUSED', `image ${ref} cannot run as a sandbox: ${why}`, {
      details: { image: ref },
    });
  if ((info.Os ?? 'linux') !== 'linux' || (info.Architecture ?? 'amd64') !== 'amd64') {
    throw refuse(`it is built for ${info.Os}/${info.Architecture}; this operator runs linux/amd64 images`);
  }
  const volumes = Object.keys(info.Config?.Volumes ?? {});
  if (volumes.length) {
    throw refuse(
      `it declares VOLUME ${volumes.join(', ')}, which would make that part of the read-only root filesystem writable; rebuild it without VOLUME (the workspace /home/agent is the sandbox's only writable disk)`,
    );
  }
  const ours = Object.keys(info.Config?.Labels ?? {}).filter((k) => k.startsWith('agent-sandbox.'));
  if (ours.length) throw refuse(`it carries labels of this platform (${ours.join(', ')}); remove them`);

  let id: string | undefined;
  try {
    const c = await docker.createContainer({
      Image: info.Id,
      Entrypoint: ['/nonexistent'],
      Cmd: [],
      NetworkDisabled: true,
      Labels: { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, [LABEL_KIND]: 'probe' },
      HostConfig: { NetworkMode: 'none' },
    });
    id = c.id;
    for (const path of NO_LINK_PATHS) {
      const st = await statPath(c, path);
      if (st && (st.mode & MODE_SYMLINK || st.linkTarget)) {
        throw refuse(
          `${path} is a symlink (to ${st.linkTarget || '?'}); the sandbox mounts its workspace, temporary files or sidecar there, so it must be a plain directory or absent`,
        );
      }
      if (st && path === KIT_MOUNT) throw refuse(`it has ${KIT_MOUNT}, where the sandbox mounts its sidecar`);
    }
    for (const path of ABSENT_PATHS) {
      if (await statPath(c, path)) {
        throw refuse(
          `it has ${path}, which would load a library into every process, the root sidecar's included`,
        );
      }
    }
    for (const path of NEEDED) {
      if (!(await statPath(c, path))) throw refuse(`it has no ${path}; sandboxes run commands with bash`);
    }
  } finally {
    if (id)
      await docker
        .getContainer(id)
        .remove({ force: true, v: true })
        .catch(() => {});
  }
  return { env: info.Config?.Env ?? [] };
}

async function statPath(
  c: Docker.Container,
  path: string,
): Promise<{ mode: number; linkTarget: string } | undefined> {
  try {
    const res = (await c.infoArchive({ path })) as { headers?: Record<string, string>; resume?: () => void };
    res.resume?.();
    const raw = res.headers?.['x-docker-container-path-stat'];
    if (!raw) return { mode: 0, linkTarget: '' };
    const st = JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as {
      mode: number;
      linkTarget?: string;
    };
    return { mode: st.mode, linkTarget: st.linkTarget ?? '' };
  } catch (e) {
    if (dockerStatus(e) === 404) return undefined;
    throw new RuntimeError('DOCKER_ERROR', `could not look up ${path} in the image`, { cause: e });
  }
}
