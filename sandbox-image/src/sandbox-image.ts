// Builds `agent-sandbox:<content-hash>` (cached Debian base + agent user + sidecar bundle) or the
// harness image `agent-sandbox-harnesses:<content-hash>` (the cached harness layer + sidecar bundle).
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { baseImageTag, ensureBaseImage } from './base-image.ts';
import { bundleSidecar, type SidecarBundle } from './bundle.ts';
import { dockerBuild } from './docker-build.ts';
import { dockerClient, imageExists, type ProgressFn } from './docker-util.ts';
import { sandboxDockerfile } from './dockerfile.ts';
import { ensureHarnessLayer, HARNESS_PACKAGES, harnessLayerTag } from './harness-layer.ts';
import { withBuildLock } from './lock.ts';

export { HARNESS_PACKAGES } from './harness-layer.ts';

export const SANDBOX_REPO = 'agent-sandbox';
export const SANDBOX_HARNESS_REPO = 'agent-sandbox-harnesses';

export interface EnsureSandboxImageOptions {
  /** Progress of long steps (debootstrap, import, build); defaults to silence. */
  onProgress?: ProgressFn;
  /** The harness image instead: the agent harness CLIs and a newer Node, in a separate tag. */
  withHarnesses?: boolean;
  docker?: Docker;
}

export interface SandboxImage {
  tag: string;
  built: boolean;
}

interface Recipe {
  tag: string;
  baseTag: string;
  dockerfile: string;
  bundle: SidecarBundle;
}

async function recipe(withHarnesses: boolean): Promise<Recipe> {
  const baseTag = withHarnesses ? harnessLayerTag() : baseImageTag();
  const dockerfile = sandboxDockerfile(baseTag, { withHarnesses });
  const bundle = await bundleSidecar();
  const h = createHash('sha256').update(dockerfile);
  for (const [name, bytes] of Object.entries(bundle)) h.update(`\0${name}\0`).update(bytes);
  if (withHarnesses) h.update(`\0${HARNESS_PACKAGES.join(',')}`);
  const repo = withHarnesses ? SANDBOX_HARNESS_REPO : SANDBOX_REPO;
  return { tag: `${repo}:${h.digest('hex').slice(0, 16)}`, baseTag, dockerfile, bundle };
}

/** The tag the current sources would build (the content hash of base recipe, Dockerfile and bundle). */
export async function sandboxImageTag(opts: { withHarnesses?: boolean } = {}): Promise<string> {
  return (await recipe(opts.withHarnesses ?? false)).tag;
}

/**
 * Ensures the sandbox image for the current sources exists and returns its tag. Skips all work
 * when the tag exists; rebuilds only the top layers when just the sidecar changed (seconds);
 * debootstraps the base (about a minute) only when the package list or suite changed.
 */
export async function ensureSandboxImage(opts: EnsureSandboxImageOptions = {}): Promise<SandboxImage> {
  const progress = opts.onProgress ?? (() => {});
  const docker = opts.docker ?? dockerClient();
  const withHarnesses = opts.withHarnesses ?? false;
  const r = await recipe(withHarnesses);
  if (await imageExists(docker, r.tag)) return { tag: r.tag, built: false };
  return withBuildLock(
    'image',
    () => progress('another process is building the image; waiting for it'),
    async () => {
      if (await imageExists(docker, r.tag)) return { tag: r.tag, built: false };
      const started = Date.now();
      await ensureBaseImage(docker, progress);
      if (withHarnesses) await ensureHarnessLayer(docker, progress);
      progress(`build: ${r.tag} FROM ${r.baseTag}`);
      await dockerBuild(docker, r.tag, progress, async (ctx) => {
        await writeFile(join(ctx, 'Dockerfile'), r.dockerfile);
        for (const [name, bytes] of Object.entries(r.bundle)) await writeFile(join(ctx, name), bytes);
        return ['Dockerfile', ...Object.keys(r.bundle)];
      });
      progress(`build: ${r.tag} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return { tag: r.tag, built: true };
    },
  );
}
