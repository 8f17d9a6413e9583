// Builds `agent-sandbox:<content-hash>`: cached Debian base + agent user + sidecar bundle (+ optional harness CLIs).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SidecarError } from '@agent-sandbox/sidecar';
import type Docker from 'dockerode';
import { baseImageTag, ensureBaseImage } from './base-image.ts';
import { bundleSidecar } from './bundle.ts';
import { dockerClient, imageExists, type ProgressFn } from './docker-util.ts';
import { sandboxDockerfile } from './dockerfile.ts';
import { withBuildLock } from './lock.ts';

export const SANDBOX_REPO = 'agent-sandbox';
export const SANDBOX_HARNESS_REPO = 'agent-sandbox-harnesses';

/** The harness CLIs the optional variant installs from the npm registry. */
export const HARNESS_PACKAGES = [
  '@openai/codex',
  '@anthropic-ai/claude-code',
  'opencode-ai',
  '@google/gemini-cli',
];

export interface EnsureSandboxImageOptions {
  /** Progress of long steps (debootstrap, import, build); defaults to silence. */
  onProgress?: ProgressFn;
  /** Also install the agent harness CLIs from npm into a separate tag (not needed by tests). */
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
  bundle: Buffer;
}

async function recipe(withHarnesses: boolean): Promise<Recipe> {
  const baseTag = baseImageTag();
  const dockerfile = sandboxDockerfile(baseTag, { withHarnesses });
  const bundle = await bundleSidecar();
  const h = createHash('sha256').update(dockerfile).update('\0').update(bundle);
  if (withHarnesses) h.update(`\0${HARNESS_PACKAGES.join(',')}`);
  const repo = withHarnesses ? SANDBOX_HARNESS_REPO : SANDBOX_REPO;
  return { tag: `${repo}:${h.digest('hex').slice(0, 16)}`, baseTag, dockerfile, bundle };
}

/** The tag the current sources would build (the content hash of base recipe, Dockerfile and bundle). */
export async function sandboxImageTag(opts: { withHarnesses?: boolean } = {}): Promise<string> {
  return (await recipe(opts.withHarnesses ?? false)).tag;
}

function npmInstall(prefix: string, progress: ProgressFn): Promise<void> {
  return new Promise((resolve, reject) => {
    progress(`harnesses: npm install ${HARNESS_PACKAGES.join(' ')}`);
    const child = spawn(
      'npm',
      [
        'install',
        '--prefix',
        prefix,
        '--no-audit',
        '--no-fund',
        '--omit=dev',
        '--loglevel=error',
        ...HARNESS_PACKAGES,
      ],
      { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(
            new SidecarError('IMAGE_BUILD_FAILED', `npm install of the harness CLIs exited with ${code}`),
          ),
    );
  });
}

async function dockerBuild(docker: Docker, r: Recipe, withHarnesses: boolean, progress: ProgressFn) {
  const ctx = await mkdtemp(join(tmpdir(), 'agent-sandbox-ctx-'));
  try {
    await writeFile(join(ctx, 'Dockerfile'), r.dockerfile);
    await writeFile(join(ctx, 'sidecar.cjs'), r.bundle);
    const src = ['Dockerfile', 'sidecar.cjs'];
    if (withHarnesses) {
      await npmInstall(join(ctx, 'harnesses'), progress);
      src.push('harnesses');
    }
    const stream = await docker.buildImage(
      { context: ctx, src },
      { t: r.tag, rm: true, forcerm: true, labels: { 'agent-sandbox.image': 'sandbox' } },
    );
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(
        stream,
        (err: Error | null) => (err ? reject(err) : resolve()),
        (ev: { stream?: string; error?: string }) => {
          const line = ev.stream?.trim();
          if (line && /^Step \d+/.test(line)) progress(`build: ${line}`);
        },
      ),
    );
    if (!(await imageExists(docker, r.tag))) {
      throw new SidecarError('IMAGE_BUILD_FAILED', `docker build finished but ${r.tag} does not exist`);
    }
  } catch (err) {
    if (err instanceof SidecarError) throw err;
    throw new SidecarError(
      'IMAGE_BUILD_FAILED',
      `docker build of ${r.tag} failed: ${(err as Error).message}`,
      500,
      {
        cause: err,
      },
    );
  } finally {
    await rm(ctx, { recursive: true, force: true });
  }
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
      progress(`build: ${r.tag} FROM ${r.baseTag}`);
      await dockerBuild(docker, r, withHarnesses, progress);
      progress(`build: ${r.tag} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return { tag: r.tag, built: true };
    },
  );
}
