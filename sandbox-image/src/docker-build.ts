// One `docker build` from a temporary context directory that the caller fills, with progress and clear errors.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SidecarError } from '@agent-sandbox/sidecar';
import type Docker from 'dockerode';
import { imageExists, type ProgressFn } from './docker-util.ts';

/** Builds `tag` from a fresh context; `fill` writes the context and returns the paths to send. */
export async function dockerBuild(
  docker: Docker,
  tag: string,
  progress: ProgressFn,
  fill: (ctx: string) => Promise<string[]>,
): Promise<void> {
  const ctx = await mkdtemp(join(tmpdir(), 'agent-sandbox-ctx-'));
  try {
    const src = await fill(ctx);
    const stream = await docker.buildImage(
      { context: ctx, src },
      { t: tag, rm: true, forcerm: true, labels: { 'agent-sandbox.image': 'sandbox' } },
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
    if (!(await imageExists(docker, tag))) {
      throw new SidecarError('IMAGE_BUILD_FAILED', `docker build finished but ${tag} does not exist`);
    }
  } catch (err) {
    if (err instanceof SidecarError) throw err;
    throw new SidecarError(
      'IMAGE_BUILD_FAILED',
      `docker build of ${tag} failed: ${(err as Error).message}`,
      500,
      {
        cause: err,
      },
    );
  } finally {
    await rm(ctx, { recursive: true, force: true });
  }
}
