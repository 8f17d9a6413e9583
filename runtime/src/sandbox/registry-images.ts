// Registry images in a sandbox's life: the allow-list check, the pull at image_pull (the
// operator's login, progress into the provision, the size cap, the digest), the checks of what
// the image may not do, and the sidecar kit its containers mount.
import type Docker from 'dockerode';
import { checkForeignImage } from '../docker/foreign-image.ts';
import { allowListed, parseImageRef, pullRef } from '../docker/image-ref.ts';
import { type PullProgress, pullImage } from '../docker/registry-pull.ts';
import { ensureSidecarKit } from '../docker/sidecar-kit.ts';
import { RuntimeError } from '../errors.ts';
import type { SandboxContext } from './context.ts';
import type { ProvisionTracker } from './provision-progress.ts';
import type { SandboxRecord } from './record.ts';

/** Whether `image` names a registry (and so is pulled and gets the mounted sidecar). */
export function isRegistryImage(image: string): boolean {
  return parseImageRef(image)?.registry !== undefined;
}

/** IMAGE_NOT_ALLOWED unless the registry image matches SANDBOX_IMAGE_ALLOWLIST. */
export function checkRegistryImage(ctx: Pick<SandboxContext, 'cfg'>, image: string): void {
  if (!allowListed(image, ctx.cfg.imageAllowlist)) {
    throw new RuntimeError(
      'IMAGE_NOT_ALLOWED',
      `image "${image}" is not on this operator's allow-list (SANDBOX_IMAGE_ALLOWLIST); leave image empty for the default or ask the operator which registries it serves`,
      { details: { image } },
    );
  }
}

const PROGRESS_EVERY_MS = 250;

/**
 * Pulls the record's registry image (skipped when pinned by digest and already here), checks it,
 * and returns the reference by digest that the sandbox then runs.
 */
export async function pullRegistryImage(
  ctx: SandboxContext,
  rec: SandboxRecord,
  tracker: ProvisionTracker,
): Promise<string> {
  checkRegistryImage(ctx, rec.image);
  const ref = parseImageRef(rec.image)!;
  const name = pullRef(ref);
  let pinned: string | undefined;
  if (ref.digest) {
    const have = await ctx.driver.docker
      .getImage(name)
      .inspect()
      .catch(() => undefined);
    if (have?.RepoDigests?.includes(name)) pinned = name;
  }
  if (!pinned) {
    let last = 0;
    let latest: PullProgress | undefined;
    let writing: Promise<void> = Promise.resolve();
    const write = (p: PullProgress, done: boolean) => {
      writing = writing.then(() => tracker.pullProgress({ image: name, ...p, done }).catch(() => {}));
    };
    const pulled = await pullImage(ctx.driver.docker, ref, {
      logins: ctx.cfg.registryLogins,
      maxBytes: ctx.cfg.imageMaxMb * 1024 * 1024,
      onProgress: (p) => {
        latest = p;
        const now = Date.now();
        if (now - last >= PROGRESS_EVERY_MS) {
          last = now;
          write(p, false);
        }
      },
    });
    const final = latest ?? { layers: 0, layersDone: 0, bytesDone: 0, bytesTotal: 0 };
    write({ ...final, layersDone: final.layers, bytesDone: final.bytesTotal }, true);
    await writing;
    pinned = pulled.pinned;
  }
  await checkForeignImage(ctx.driver.docker, pinned);
  return pinned;
}

const kits = new WeakMap<Docker, Map<string, Promise<string>>>();

/** The kit volume of this operator's default image (filled once per engine and image). */
export function sidecarKit(ctx: SandboxContext): Promise<string> {
  const docker = ctx.driver.docker;
  const byImage = kits.get(docker) ?? new Map<string, Promise<string>>();
  kits.set(docker, byImage);
  let p = byImage.get(ctx.cfg.image);
  if (!p) {
    p = ensureSidecarKit(docker, ctx.cfg.image);
    byImage.set(ctx.cfg.image, p);
    p.catch(() => byImage.delete(ctx.cfg.image));
  }
  return p;
}

/** What a launch of a mounted-sidecar record needs: the kit and the image's own env. */
export async function mountedSidecarFor(
  ctx: SandboxContext,
  rec: Pick<SandboxRecord, 'mountedSidecar'>,
  image: string,
): Promise<{ kitVolume: string; imageEnv: string[] } | undefined> {
  if (!rec.mountedSidecar) return undefined;
  const [kitVolume, info] = await Promise.all([sidecarKit(ctx), ctx.driver.inspectImage(image)]);
  if (!info) throw new RuntimeError('IMAGE_NOT_FOUND', `image ${image} is not in this operator's engine`);
  return { kitVolume, imageEnv: info.env };
}
