// The Docker side of the runtime: containers, workspace volumes, snapshots (commit, workspace tar,
// save/load) through dockerode. Knows sandboxes only as container specs and labels.
import { createReadStream, createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import Docker from 'dockerode';
import { RuntimeError } from '../errors.ts';
import { buildContainerSpec, type ContainerSpecInput } from './container-spec.ts';
import { scrubSavedImage } from './image-scrub.ts';
import { LABEL_MANAGED_BY, LABEL_OPERATOR, MANAGED_BY_VALUE } from './labels.ts';

export interface ManagedContainer {
  id: string;
  sandboxId: string | undefined;
  state: string;
  labels: Record<string, string>;
  /** Host ports bound on 127.0.0.1, by container port. */
  loopbackPorts: Record<number, number>;
}

interface DockerErrorLike {
  statusCode?: number;
  json?: { message?: string } | null;
  message?: string;
}

export function dockerStatus(e: unknown): number | undefined {
  return (e as DockerErrorLike | null)?.statusCode;
}

export function dockerMessage(e: unknown): string {
  const d = e as DockerErrorLike | null;
  return (d?.json?.message ?? d?.message ?? String(e)).trim();
}

function wrap(what: string, e: unknown): RuntimeError {
  if (e instanceof RuntimeError) return e;
  return new RuntimeError('DOCKER_ERROR', `docker ${what} failed: ${dockerMessage(e)}`, { cause: e });
}

export class DockerDriver {
  readonly docker: Docker;
  #diskQuota: Promise<boolean> | undefined;
  readonly #imageEnv = new Map<string, string[]>();

  constructor(docker?: Docker) {
    this.docker =
      docker ?? new Docker(process.env.DOCKER_HOST ? undefined : { socketPath: '/var/run/docker.sock' });
  }

  /** The image's id and env, or undefined when the engine does not have it (nothing is pulled). */
  async inspectImage(ref: string): Promise<{ id: string; env: string[] } | undefined> {
    try {
      const info = await this.docker.getImage(ref).inspect();
      return { id: info.Id, env: info.Config?.Env ?? [] };
    } catch (e) {
      if (dockerStatus(e) === 404) return undefined;
      throw wrap(`inspect image ${ref}`, e);
    }
  }

  /**
   * Whether this engine's storage driver can cap a container's writable layer (StorageOpt size).
   * overlay2 needs xfs with pquota; devicemapper/btrfs/zfs can. Probed once with a real create.
   */
  diskQuotaSupported(image: string): Promise<boolean> {
    this.#diskQuota ??= (async () => {
      let id: string | undefined;
      try {
        const c = await this.docker.createContainer({
          Image: image,
          Labels: { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, 'agent-sandbox.kind': 'probe' },
          HostConfig: { StorageOpt: { size: '1G' } },
          Cmd: ['true'],
        });
        id = c.id;
        return true;
      } catch (e) {
        if (/storage.?opt|quota|not supported/i.test(dockerMessage(e))) return false;
        throw wrap('probe of disk quota support', e);
      } finally {
        if (id) await this.removeContainer(id);
      }
    })();
    this.#diskQuota.catch(() => {
      this.#diskQuota = undefined;
    });
    return this.#diskQuota;
  }

  async createContainer(spec: ContainerSpecInput): Promise<string> {
    try {
      const c = await this.docker.createContainer(buildContainerSpec(spec));
      return c.id;
    } catch (e) {
      const msg = dockerMessage(e);
      if (dockerStatus(e) === 404 && /no such image/i.test(msg)) {
        throw new RuntimeError(
          'IMAGE_NOT_FOUND',
          `image ${spec.image} is not present on this operator's engine and cannot be pulled; build or load it first`,
          { cause: e },
        );
      }
      if (dockerStatus(e) === 409) {
        throw new RuntimeError('CONFLICT', `a container named ${spec.name} already exists`, { cause: e });
      }
      throw wrap('create container', e);
    }
  }

  /**
   * Starts the container and returns the loopback host port the engine bound to `port` (none when
   * `port` is undefined: a container without a network publishes nothing). A wait for the
   * container's exit is armed before start so a sidecar that crashes fails the health wait at once
   * instead of at its deadline.
   */
  async start(
    id: string,
    port: number | undefined,
  ): Promise<{
    hostPort: number;
    /** Every container TCP port bound on 127.0.0.1 → its host port (the sidecar's included). */
    loopbackPorts: Record<number, number>;
    exited: Promise<string>;
    cancel: () => void;
  }> {
    const c = this.docker.getContainer(id);
    const ac = new AbortController();
    const exited = c
      .wait({ condition: 'next-exit', abortSignal: ac.signal })
      .then(
        (r: { StatusCode?: number }) =>
          `sidecar exited with status ${r?.StatusCode ?? '?'} before it became healthy`,
      );
    exited.catch(() => {});
    try {
      await c.start().catch((e: unknown) => {
        // Already running (304) is fine: start is idempotent here.
        if (dockerStatus(e) !== 304) throw e;
      });
      if (port === undefined) return { hostPort: 0, loopbackPorts: {}, exited, cancel: () => ac.abort() };
      const info = await c.inspect();
      const binding = info.NetworkSettings?.Ports?.[`${port}/tcp`]?.find((b) => b.HostIp === '127.0.0.1');
      const hostPort = Number(binding?.HostPort);
      if (!Number.isInteger(hostPort) || hostPort <= 0) {
        if (!info.State?.Running) {
          throw new RuntimeError(
            'PROVISION_FAILED',
            `sidecar exited with status ${info.State?.ExitCode ?? '?'} before it became healthy`,
          );
        }
        throw new RuntimeError(
          'DOCKER_ERROR',
          `container ${id.slice(0, 12)} has no loopback port for ${port}`,
        );
      }
      const loopbackPorts: Record<number, number> = {};
      for (const [key, bindings] of Object.entries(info.NetworkSettings?.Ports ?? {})) {
        const b = bindings?.find((x) => x.HostIp === '127.0.0.1');
        if (key.endsWith('/tcp') && b) loopbackPorts[Number.parseInt(key, 10)] = Number(b.HostPort);
      }
      return { hostPort, loopbackPorts, exited, cancel: () => ac.abort() };
    } catch (e) {
      ac.abort();
      throw wrap('start container', e);
    }
  }

  /** Stops a container; a missing or already stopped one is fine (stop is idempotent). */
  async stop(id: string, timeoutSeconds: number): Promise<'stopped' | 'missing'> {
    try {
      await this.docker.getContainer(id).stop({ t: timeoutSeconds });
      return 'stopped';
    } catch (e) {
      if (dockerStatus(e) === 304) return 'stopped';
      if (dockerStatus(e) === 404) return 'missing';
      throw wrap('stop container', e);
    }
  }

  async exists(id: string): Promise<{ running: boolean } | undefined> {
    try {
      const info = await this.docker.getContainer(id).inspect();
      return { running: info.State?.Running === true };
    } catch (e) {
      if (dockerStatus(e) === 404) return undefined;
      throw wrap('inspect container', e);
    }
  }

  /** The image id, env names, networks and bind sources a container was created with (undefined when it is gone). */
  async containerSetup(
    id: string,
  ): Promise<{ image: string; envKeys: string[]; networks: string[]; binds: string[] } | undefined> {
    try {
      const info = await this.docker.getContainer(id).inspect();
      return {
        image: info.Image,
        envKeys: (info.Config?.Env ?? []).map((e) => e.split('=')[0] ?? ''),
        networks: Object.keys(info.NetworkSettings?.Networks ?? {}),
        binds: (info.Mounts ?? []).filter((m) => m.Type === 'bind').map((m) => m.Source),
      };
    } catch (e) {
      if (dockerStatus(e) === 404) return undefined;
      throw wrap('inspect container', e);
    }
  }

  /** Force-removes a container; missing is fine. */
  async removeContainer(id: string): Promise<void> {
    try {
      await this.docker.getContainer(id).remove({ force: true, v: false });
    } catch (e) {
      const s = dockerStatus(e);
      if (s === 404) return;
      // "removal already in progress" from a concurrent delete.
      if (s === 409 && /already in progress/i.test(dockerMessage(e))) return;
      throw wrap('remove container', e);
    }
  }

  async removeVolume(name: string): Promise<void> {
    try {
      await this.docker.getVolume(name).remove({ force: true });
    } catch (e) {
      if (dockerStatus(e) === 404) return;
      throw wrap(`remove volume ${name}`, e);
    }
  }

  async volumeExists(name: string): Promise<boolean> {
    try {
      await this.docker.getVolume(name).inspect();
      return true;
    } catch (e) {
      if (dockerStatus(e) === 404) return false;
      throw wrap(`inspect volume ${name}`, e);
    }
  }

  /**
   * Removes an image; missing is fine. Without `force`, an image a container still uses is left
   * in place (returns false) instead of being untagged under it.
   */
  async removeImage(ref: string, force = true): Promise<boolean> {
    try {
      await this.docker.getImage(ref).remove({ force, noprune: false });
      return true;
    } catch (e) {
      if (dockerStatus(e) === 404) return true;
      if (!force && dockerStatus(e) === 409) return false;
      throw wrap(`remove image ${ref}`, e);
    }
  }

  /** Ids of images carrying `label=value` (snapshots of one sandbox). */
  async imagesWithLabel(label: string, value: string): Promise<string[]> {
    try {
      const list = await this.docker.listImages({ all: false, filters: { label: [`${label}=${value}`] } });
      return list.map((i) => i.Id);
    } catch (e) {
      throw wrap('list images', e);
    }
  }

  /** Workspace volumes of this operator (one list call, by label). */
  async listManagedVolumes(
    operatorId: string,
  ): Promise<Array<{ name: string; sandboxId: string | undefined }>> {
    try {
      const res = await this.docker.listVolumes({
        filters: { label: [`${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`, `${LABEL_OPERATOR}=${operatorId}`] },
      });
      return (res.Volumes ?? []).map((v) => ({ name: v.Name, sandboxId: v.Labels?.['agent-sandbox.id'] }));
    } catch (e) {
      throw wrap('list volumes', e);
    }
  }

  /**
   * Commits the container to `repo:tag`. The committed config would otherwise inherit the
   * container's env (sidecar token, user secrets) into the image — and from there into a saved
   * archive on disk — so every env key the image did not bring itself is blanked.
   */
  async commit(
    containerId: string,
    repo: string,
    tag: string,
    opts: { baseImageEnv: string[]; containerEnvKeys: string[]; labels: Record<string, string> },
  ): Promise<string> {
    const baseKeys = new Set(opts.baseImageEnv.map((e) => e.split('=')[0]));
    const env = [
      ...opts.baseImageEnv,
      ...opts.containerEnvKeys.filter((k) => !baseKeys.has(k)).map((k) => `${k}=`),
    ];
    try {
      const res = (await this.docker.getContainer(containerId).commit({
        _query: { container: containerId, repo, tag, pause: false },
        _body: { Env: env, Labels: opts.labels },
      })) as { Id: string };
      return res.Id;
    } catch (e) {
      throw wrap('commit container', e);
    }
  }

  /** Writes a tar of `path` inside the container (its volume included) to `file`. */
  async archivePath(containerId: string, path: string, file: string): Promise<void> {
    try {
      const stream = await this.docker.getContainer(containerId).getArchive({ path });
      await pipeline(stream, createWriteStream(file, { mode: 0o600 }));
    } catch (e) {
      throw wrap(`archive of ${path}`, e);
    }
  }

  /**
   * `docker save` of one image to `file`. With `scrubAs`, the stream is rewritten on the way to
   * disk (see image-scrub.ts) so the archive holds no committing container's env, and loads back
   * tagged `scrubAs`.
   */
  async saveImage(ref: string, file: string, scrubAs?: string): Promise<void> {
    try {
      const stream = (await this.docker.getImage(ref).get()) as NodeJS.ReadableStream & AsyncIterable<Buffer>;
      const out = scrubAs ? scrubSavedImage(stream, scrubAs) : stream;
      await pipeline(out, createWriteStream(file, { mode: 0o600 }));
    } catch (e) {
      throw wrap(`save image ${ref}`, e);
    }
  }

  /**
   * Replaces an image in the engine by its scrubbed copy (save -> scrub -> load, streamed, never
   * on disk) tagged `repoTag`, and removes the original; returns the new image id.
   */
  async scrubImageInEngine(ref: string, repoTag: string): Promise<string> {
    try {
      const stream = (await this.docker.getImage(ref).get()) as NodeJS.ReadableStream & AsyncIterable<Buffer>;
      await this.loadImage(scrubSavedImage(stream, repoTag));
    } catch (e) {
      throw wrap(`scrub of image ${ref}`, e);
    }
    const loaded = await this.inspectImage(repoTag);
    if (!loaded) throw new RuntimeError('DOCKER_ERROR', `scrubbed image ${repoTag} did not load`);
    if (loaded.id !== ref) await this.removeImage(ref);
    return loaded.id;
  }

  /** `docker load` of an archive written by saveImage (a path or a stream); its tag comes back. */
  async loadImage(source: string | NodeJS.ReadableStream): Promise<void> {
    try {
      const input = typeof source === 'string' ? createReadStream(source) : source;
      const stream = await this.docker.loadImage(input, { quiet: true });
      await new Promise<void>((resolve, reject) => {
        this.docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve()));
      });
    } catch (e) {
      throw wrap(`load image${typeof source === 'string' ? ` from ${source}` : ''}`, e);
    }
  }

  /** Every container of this operator (one list call, by label), running or not. */
  async listManaged(operatorId: string): Promise<ManagedContainer[]> {
    try {
      const list = await this.docker.listContainers({
        all: true,
        filters: { label: [`${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`, `${LABEL_OPERATOR}=${operatorId}`] },
      });
      return list.map((c) => ({
        id: c.Id,
        sandboxId: c.Labels?.['agent-sandbox.id'],
        state: c.State,
        labels: c.Labels ?? {},
        loopbackPorts: Object.fromEntries(
          (c.Ports ?? [])
            .filter((p) => p.IP === '127.0.0.1' && p.PublicPort)
            .map((p) => [p.PrivatePort, p.PublicPort]),
        ),
      }));
    } catch (e) {
      throw wrap('list containers', e);
    }
  }

  async imageEnv(ref: string): Promise<string[]> {
    const hit = this.#imageEnv.get(ref);
    if (hit) return hit;
    const info = await this.inspectImage(ref);
    const env = info?.env ?? [];
    this.#imageEnv.set(ref, env);
    return env;
  }
}
