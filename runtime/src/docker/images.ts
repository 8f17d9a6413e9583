// The image side of the Docker driver: inspect, remove, commit (env blanked), save (scrubbed,
// size-limited), load, and the scrub that replaces a committed image by one without its
// container's config (image-scrub.ts). DockerDriver extends it with containers and volumes.
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { RuntimeError } from '../errors.ts';
import { SizeLimitExceeded, writeBounded } from './bounded-write.ts';
import { dockerStatus, wrap } from './docker-errors.ts';
import { configOnlyArchive, type HistoryFact, type ImageFacts, scrubSavedImage } from './image-scrub.ts';

export class DockerImages {
  constructor(readonly docker: Docker) {}

  readonly #imageEnv = new Map<string, string[]>();

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

  /**
   * `docker save` of one image to `file`. With `scrubAs`, the stream is rewritten on the way to
   * disk (see image-scrub.ts) so the archive holds no committing container's env, and loads back
   * tagged `scrubAs`.
   */
  async saveImage(ref: string, file: string, scrubAs?: string, maxBytes?: number): Promise<number> {
    try {
      const stream = (await this.docker.getImage(ref).get()) as NodeJS.ReadableStream & AsyncIterable<Buffer>;
      const out = scrubAs ? scrubSavedImage(stream, scrubAs) : stream;
      return await writeBounded(out, file, maxBytes);
    } catch (e) {
      if (e instanceof SizeLimitExceeded) throw e;
      throw wrap(`save image ${ref}`, e);
    }
  }

  /** The image's total size in bytes (its layers, shared ones included), or 0 when absent. */
  async imageSize(ref: string): Promise<number> {
    try {
      return (await this.docker.getImage(ref).inspect()).Size ?? 0;
    } catch (e) {
      if (dockerStatus(e) === 404) return 0;
      throw wrap(`inspect image ${ref}`, e);
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

  /**
   * The image without its committing container's config (token and secrets are in its env), tagged
   * `repoTag`; the original is removed. Already clean → returned as is. The config-only load (no
   * layer read, milliseconds) is tried first, the full save -> scrub -> load after.
   */
  async scrubImage(ref: string, repoTag: string): Promise<string> {
    const img = this.docker.getImage(ref);
    let info: Docker.ImageInspectInfo;
    let history: HistoryFact[];
    try {
      info = await img.inspect();
      history = (await img.history()) as HistoryFact[];
    } catch (e) {
      throw wrap(`inspect image ${ref}`, e);
    }
    if (!info.Container && !info.ContainerConfig?.Env?.length) return info.Id;
    const tar = configOnlyArchive(info as unknown as ImageFacts, history, repoTag);
    if (tar) {
      const loaded = await this.loadImage(Readable.from([tar]))
        .then(() => this.inspectImage(repoTag))
        .catch(() => undefined);
      if (loaded && loaded.id !== info.Id) {
        await this.removeImage(info.Id);
        return loaded.id;
      }
    }
    return this.scrubImageInEngine(info.Id, repoTag);
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

  async imageEnv(ref: string): Promise<string[]> {
    const hit = this.#imageEnv.get(ref);
    if (hit) return hit;
    const info = await this.inspectImage(ref);
    const env = info?.env ?? [];
    this.#imageEnv.set(ref, env);
    return env;
  }
}
