import Docker from 'dockerode';
import { RuntimeError } from '../errors.ts';
import { SizeLimitExceeded, writeBounded } from './bounded-write.ts';
import { buildContainerSpec, type ContainerSpecInput } from './container-spec.ts';
import { dockerMessage, dockerStatus, engineGone, wrap } from './docker-errors.ts';
import { DockerImages } from './images.ts';
import { LABEL_MANAGED_BY, LABEL_OPERATOR, MANAGED_BY_VALUE } from './labels.ts';
import type { LoopDisks } from './loop-disk.ts';

export interface ManagedContainer {
  id: string;
  sandboxId: string | undefined;
  state: string;
  labels: Record<string, string>;
  /** Host ports bound on 127.0.0.1, by container port. */
  loopbackPorts: Record<number, number>;
}

export { dockerMessage, dockerStatus } from './docker-errors.ts';
export { SizeLimitExceeded };

export class DockerDriver extends DockerImages {
  /** When set, workspace volumes asked for as `workspaceDisk` are size-limited loop disks. */
  disks: LoopDisks | undefined;
  #diskQuota: Promise<boolean> | undefined;

  constructor(docker?: Docker) {
    super(docker ?? new Docker(process.env.DOCKER_HOST ? undefined : { socketPath: '/var/run/docker.sock' }));
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
    if (spec.workspaceDisk && this.disks && !(await this.volumeExists(spec.volumeName))) {
      spec = { ...spec, volumeDevice: await this.disks.ensure(spec.volumeName, spec.diskGb) };
    } else if (spec.workspaceDisk && this.disks) {
      await this.disks.attach(spec.volumeName);
    }
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
    /** The container's IPv4 address on each network it joined (network name → address). */
    ips: Record<string, string>;
    exited: Promise<string>;
    cancel: () => void;
  }> {
    const c = this.docker.getContainer(id);
    const ac = new AbortController();
    const exited = c.wait({ condition: 'next-exit', abortSignal: ac.signal }).then(
      (r: { StatusCode?: number }) =>
        `sidecar exited with status ${r?.StatusCode ?? '?'} before it became healthy`,
      // The engine went away under the wait: the health wait ends now, as an engine loss.
      (e: unknown) => {
        if (engineGone(e))
          return `the Docker engine went away (${(e as { code?: string }).code}) before the sidecar became healthy`;
        throw e;
      },
    );
    exited.catch(() => {});
    try {
      // A loop-disk workspace needs its device attached (gone after a host reboot or its last
      // unmount) to mount; once mounted it is detached lazily, to go with the unmount.
      const disks = this.disks ? await this.#diskVolumes(c) : [];
      for (const v of disks) await this.disks!.attach(v);
      await c.start().catch((e: unknown) => {
        // Already running (304) is fine: start is idempotent here.
        if (dockerStatus(e) !== 304) throw e;
      });
      for (const v of disks) await this.disks!.detachWhenUnmounted(v);
      if (port === undefined)
        return { hostPort: 0, loopbackPorts: {}, ips: {}, exited, cancel: () => ac.abort() };
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
      const ips: Record<string, string> = {};
      for (const [name, n] of Object.entries(info.NetworkSettings?.Networks ?? {})) {
        if (n?.IPAddress) ips[name] = n.IPAddress;
      }
      return { hostPort, loopbackPorts, ips, exited, cancel: () => ac.abort() };
    } catch (e) {
      ac.abort();
      throw wrap('start container', e);
    }
  }

  /** Runs `fn` (which mounts the container's volumes) with their loop disks attached meanwhile. */
  async withDisks<T>(c: Docker.Container, fn: () => Promise<T>): Promise<T> {
    const disks = this.disks ? await this.#diskVolumes(c) : [];
    for (const v of disks) await this.disks!.attach(v);
    try {
      return await fn();
    } finally {
      for (const v of disks) await this.disks!.detachWhenUnmounted(v);
    }
  }

  async #diskVolumes(c: Docker.Container): Promise<string[]> {
    const out: string[] = [];
    for (const m of (await c.inspect()).Mounts ?? []) {
      if (m.Type === 'volume' && m.Name && (await this.disks?.has(m.Name))) out.push(m.Name);
    }
    return out;
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

  /** Removes a volume (and its loop disk, if it has one); missing is fine. */
  async removeVolume(name: string): Promise<void> {
    try {
      await this.docker.getVolume(name).remove({ force: true });
    } catch (e) {
      if (dockerStatus(e) !== 404) throw wrap(`remove volume ${name}`, e);
    }
    await this.disks?.release(name);
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
   * Writes a tar of `path` inside the container (its volume included) to `file`; returns its size.
   * Past `maxBytes` the file is removed and SizeLimitExceeded thrown.
   */
  async archivePath(containerId: string, path: string, file: string, maxBytes?: number): Promise<number> {
    try {
      const c = this.docker.getContainer(containerId);
      return await this.withDisks(c, async () => writeBounded(await c.getArchive({ path }), file, maxBytes));
    } catch (e) {
      if (e instanceof SizeLimitExceeded) throw e;
      throw wrap(`archive of ${path}`, e);
    }
  }

  /** Bytes the container's writable layer holds (what a commit would add). */
  async containerSizeRw(id: string): Promise<number> {
    try {
      // dockerode passes options as the query (?size=true); its types omit `size`.
      const c = this.docker.getContainer(id) as unknown as {
        inspect(o: { size: boolean }): Promise<{ SizeRw?: number }>;
      };
      return (await c.inspect({ size: true })).SizeRw ?? 0;
    } catch (e) {
      throw wrap('inspect container size', e);
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
}
