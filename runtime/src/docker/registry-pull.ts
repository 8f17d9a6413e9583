// Pulls an image from a registry with the operator's own credentials, reports progress, keeps the
// download under a size cap, and checks that what arrived is the image that was named: a pinned
// digest must be among the image's RepoDigests after the pull (the engine verifies the content
// against it; this checks the engine pulled what we asked for).
import type Docker from 'dockerode';
import { RuntimeError } from '../errors.ts';
import { dockerStatus } from './docker-errors.ts';
import { type ImageRef, pullRef, repoName } from './image-ref.ts';

/** A registry login from the operator's config (docker config.json `auths`), keyed by host. */
export interface RegistryLogin {
  username: string;
  password: string;
}

export interface PullProgress {
  /** Layers the registry announced so far, and how many are complete. */
  layers: number;
  layersDone: number;
  /** Bytes downloaded / announced across those layers (compressed sizes, as the registry sends). */
  bytesDone: number;
  bytesTotal: number;
}

export interface PullOptions {
  logins: Readonly<Record<string, RegistryLogin>>;
  /** The most an image may hold (bytes): announced downloads past it abort the pull. */
  maxBytes: number;
  onProgress?: (p: PullProgress) => void;
}

export interface Pulled {
  /** The engine's image id (sha256:…). */
  id: string;
  /** `registry/repo@sha256:…`: the reference that names exactly what was pulled. */
  pinned: string;
}

interface PullEvent {
  id?: string;
  status?: string;
  error?: string;
  errorDetail?: { message?: string };
  progressDetail?: { current?: number; total?: number };
}

/** Parses docker config.json text into logins by host (`auths.<host>.auth` or username/password). */
export function parseDockerAuths(text: string): Record<string, RegistryLogin> {
  const doc = JSON.parse(text) as {
    auths?: Record<string, { auth?: string; username?: string; password?: string }>;
  };
  const out: Record<string, RegistryLogin> = {};
  for (const [host, a] of Object.entries(doc.auths ?? {})) {
    let username = a.username;
    let password = a.password;
    if (a.auth) {
      const plain = Buffer.from(a.auth, 'base64').toString('utf8');
      const i = plain.indexOf(':');
      if (i > 0) [username, password] = [plain.slice(0, i), plain.slice(i + 1)];
    }
    if (username && password !== undefined) {
      out[
        host
          .replace(/^https?:\/\//, '')
          .replace(/\/.*$/, '')
          .toLowerCase()
      ] = { username, password };
    }
  }
  return out;
}

export async function pullImage(docker: Docker, ref: ImageRef, opts: PullOptions): Promise<Pulled> {
  const name = pullRef(ref);
  const login = ref.registry ? opts.logins[ref.registry] : undefined;
  let stream: NodeJS.ReadableStream & { destroy?: (e?: Error) => void };
  try {
    stream = (await docker.pull(name, {
      ...(login ? { authconfig: { ...login, serveraddress: ref.registry } } : {}),
    })) as typeof stream;
  } catch (e) {
    throw pullFailed(name, e);
  }
  const layers = new Map<string, { done: number; total: number; complete: boolean }>();
  let tooBig: RuntimeError | undefined;
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (err: Error | null, events: PullEvent[]) => {
        if (tooBig) return reject(tooBig);
        const failed = err ?? events.find((e) => e.error);
        if (failed) return reject(pullFailed(name, failed));
        resolve();
      },
      (ev: PullEvent) => {
        if (tooBig || !ev.id || ev.id === ref.tag || ev.id === ref.digest) return;
        const l = layers.get(ev.id) ?? { done: 0, total: 0, complete: false };
        if (ev.status === 'Downloading' && ev.progressDetail?.total) {
          l.total = ev.progressDetail.total;
          l.done = ev.progressDetail.current ?? l.done;
        } else if (ev.status === 'Download complete' || ev.status === 'Pull complete') {
          l.done = l.total;
          l.complete = ev.status === 'Pull complete' || l.complete;
        } else if (ev.status === 'Already exists') {
          l.complete = true;
        }
        layers.set(ev.id, l);
        const all = [...layers.values()];
        const bytesTotal = all.reduce((s, x) => s + x.total, 0);
        if (bytesTotal > opts.maxBytes) {
          tooBig = tooLarge(name, bytesTotal, opts.maxBytes);
          stream.destroy?.();
          return reject(tooBig);
        }
        opts.onProgress?.({
          layers: all.length,
          layersDone: all.filter((x) => x.complete).length,
          bytesDone: all.reduce((s, x) => s + x.done, 0),
          bytesTotal,
        });
      },
    );
  });
  let info: Docker.ImageInspectInfo;
  try {
    info = await docker.getImage(name).inspect();
  } catch (e) {
    throw pullFailed(name, e);
  }
  // Unpacked size: layers whose download size the registry did not announce still count.
  if ((info.Size ?? 0) > opts.maxBytes) {
    await docker
      .getImage(info.Id)
      .remove({ force: false })
      .catch(() => {});
    throw tooLarge(name, info.Size, opts.maxBytes);
  }
  const pinned = (info.RepoDigests ?? []).find((d) => d.startsWith(`${repoName(ref)}@`));
  if (!pinned || (ref.digest && pinned !== `${repoName(ref)}@${ref.digest}`)) {
    throw new RuntimeError(
      'IMAGE_DIGEST_MISMATCH',
      `image ${name} arrived without the digest it was named by (engine has ${(info.RepoDigests ?? []).join(', ') || 'none'}); nothing was started`,
    );
  }
  return { id: info.Id, pinned };
}

function tooLarge(name: string, bytes: number, max: number): RuntimeError {
  const mb = (n: number) => `${Math.ceil(n / 1024 / 1024)} MB`;
  return new RuntimeError(
    'IMAGE_TOO_LARGE',
    `image ${name} is ${mb(bytes)} or more, above this operator's limit of ${mb(max)} (SANDBOX_IMAGE_MAX_MB); pick a smaller image`,
  );
}

function pullFailed(name: string, e: unknown): RuntimeError {
  const raw =
    e instanceof Error
      ? e.message
      : ((e as PullEvent).errorDetail?.message ?? (e as PullEvent).error ?? String(e));
  // Docker's text for a digest (or tag) the registry does not have.
  const missing = dockerStatus(e) === 404 || /manifest unknown|not found|does not exist/i.test(raw);
  // 'no basic auth credentials': the registry asked for a login and the engine was given none.
  const denied = /unauthorized|authentication required|denied|no basic auth credentials/i.test(raw);
  return new RuntimeError(
    missing ? 'IMAGE_NOT_FOUND' : 'IMAGE_PULL_FAILED',
    missing
      ? `image ${name} is not in its registry (no such tag or digest): check the reference; ${short(raw)}`
      : denied
        ? `the registry refused to serve ${name} to this operator (${short(raw)}): the operator's registry login (SANDBOX_REGISTRY_AUTH_FILE) is missing or wrong`
        : `pulling ${name} failed: ${short(raw)}`,
  );
}

function short(s: string): string {
  return s.length > 300 ? `${s.slice(0, 300)}…` : s;
}
