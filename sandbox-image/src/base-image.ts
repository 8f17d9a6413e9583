// Builds (once) the Debian base image from scratch: debootstrap a minbase rootfs, then `docker import` it.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SidecarError } from '@agent-sandbox/sidecar';
import type Docker from 'dockerode';
import { imageExists, lineSplitter, type ProgressFn } from './docker-util.ts';
import { debianMirror } from './mirror.ts';

export const BASE_SUITE = 'bookworm';
export const BASE_REPO = 'agent-sandbox-base';

/**
 * What the sandbox needs at run time. tini reaps zombies and forwards signals to the sidecar;
 * python3 drives real PTYs (pty/termios) so no native Node addon is needed in the image.
 */
export const BASE_PACKAGES = [
  'bash',
  'ca-certificates',
  'coreutils',
  'curl',
  'git',
  'tar',
  'gzip',
  'python3',
  'nodejs',
  'procps',
  'tini',
  'ncurses-base',
  'less',
  // SSH into a sandbox (README "SSH"): the sidecar runs `sshd -i` as the agent user per tunnel;
  // brings openssh-sftp-server (scp) and openssh-client (ssh-keygen for the per-sandbox host key).
  'openssh-server',
] as const;

/** Bumped when the rootfs recipe changes in a way the package list does not show. */
const RECIPE_VERSION = '2';

export function baseImageTag(): string {
  const h = createHash('sha256')
    .update(`${RECIPE_VERSION}\n${BASE_SUITE}\n${[...BASE_PACKAGES].sort().join(',')}`)
    .digest('hex')
    .slice(0, 16);
  return `${BASE_REPO}:${h}`;
}

function run(cmd: string, args: string[], onLine: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    const feed = lineSplitter((line) => {
      tail.push(line);
      if (tail.length > 20) tail.shift();
      onLine(line);
    });
    child.stdout.on('data', feed);
    child.stderr.on('data', feed);
    child.on('error', (err) =>
      reject(
        new SidecarError('DEBOOTSTRAP_FAILED', `cannot run ${cmd}: ${err.message}`, 500, { cause: err }),
      ),
    );
    child.on('close', (code) => {
      if (code === 0) resolve();
      else
        reject(
          new SidecarError(
            'DEBOOTSTRAP_FAILED',
            `${cmd} exited with ${code}; last output:\n${tail.join('\n')}`,
          ),
        );
    });
  });
}

async function importRootfs(docker: Docker, rootfs: string, tag: string): Promise<void> {
  const [repo, version] = tag.split(':') as [string, string];
  const tar = spawn('tar', ['--numeric-owner', '-C', rootfs, '-c', '.'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tarErr = '';
  tar.stderr.on('data', (d: Buffer) => {
    tarErr += d.toString();
  });
  // dockerode's typings miss the promise form of importImage.
  const importImage = docker.importImage.bind(docker) as unknown as (
    src: NodeJS.ReadableStream,
    opts: Record<string, unknown>,
  ) => Promise<NodeJS.ReadableStream>;
  const stream = await importImage(tar.stdout, {
    repo,
    tag: version,
    changes: ['LABEL agent-sandbox.image=base'],
  });
  await new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve())),
  );
  const code: number = await new Promise((r) =>
    tar.exitCode !== null ? r(tar.exitCode) : tar.on('close', r),
  );
  if (code !== 0) throw new SidecarError('IMAGE_BUILD_FAILED', `tar of the rootfs failed: ${tarErr}`);
}

/** Ensures the base image exists; debootstraps it (about a minute) only when its tag is missing. */
export async function ensureBaseImage(
  docker: Docker,
  progress: ProgressFn,
): Promise<{ tag: string; built: boolean }> {
  const tag = baseImageTag();
  if (await imageExists(docker, tag)) return { tag, built: false };
  if (process.getuid?.() !== 0) {
    throw new SidecarError('NOT_ROOT', `building ${tag} needs debootstrap, which must run as root`);
  }
  const mirror = debianMirror(BASE_SUITE);
  const dir = await mkdtemp(join(tmpdir(), 'agent-sandbox-rootfs-'));
  const rootfs = join(dir, 'rootfs');
  const started = Date.now();
  progress(`base: debootstrap ${BASE_SUITE} minbase from ${mirror} into ${rootfs}`);
  let lastVerb = '';
  let count = 0;
  const beat = setInterval(
    () => progress(`base: debootstrap still running (${Math.round((Date.now() - started) / 1000)} s)`),
    10_000,
  );
  try {
    await run(
      'debootstrap',
      ['--variant=minbase', `--include=${BASE_PACKAGES.join(',')}`, BASE_SUITE, rootfs, mirror],
      (line) => {
        const verb = /^I: (\w+)/.exec(line)?.[1];
        if (!verb) return;
        count++;
        if (verb !== lastVerb) {
          lastVerb = verb;
          progress(`base: debootstrap ${line.slice(3)} (step ${count})`);
        }
      },
    );
    // Package caches and indexes are dead weight in the image; the host keys openssh-server's
    // postinst made would be one private key shared by every sandbox (each makes its own).
    await run(
      'sh',
      [
        '-c',
        `rm -rf "${rootfs}"/var/cache/apt/archives/*.deb "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/etc/ssh/ssh_host_*`,
      ],
      () => {},
    );
    progress(
      `base: debootstrap done in ${Math.round((Date.now() - started) / 1000)} s; docker import ${tag}`,
    );
    await importRootfs(docker, rootfs, tag);
    progress(`base: ${tag} ready after ${Math.round((Date.now() - started) / 1000)} s`);
    return { tag, built: true };
  } finally {
    clearInterval(beat);
    await rm(dir, { recursive: true, force: true });
  }
}
