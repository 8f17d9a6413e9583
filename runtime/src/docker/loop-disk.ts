// Size-limited workspace volumes on an engine whose storage driver cannot cap them (overlay2 on
// ext4 has no `--storage-opt size`, and local volumes have no size at all): each workspace volume
// is an ext4 filesystem in a sparse file of its own (`<dir>/<volume>.img`, disk_gb), attached to a
// loop device. The Docker volume is a `local` volume of type ext4 whose device is a stable symlink
// (`<dir>/<volume>.dev`) re-pointed at the loop device on every attach, so a host reboot (loop
// devices are gone, the files stay) only needs an attach before the next start. Needs root,
// util-linux `losetup`, e2fsprogs `mkfs.ext4` and `debugfs`.
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, open, rename, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const AGENT_UID = 1000;

/** Why loop-device workspaces cannot be used here, or undefined when they can. */
export async function loopDisksUnavailable(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'the operator does not run as root (loop devices need it)';
  try {
    await access('/dev/loop-control', constants.W_OK);
  } catch {
    return '/dev/loop-control is missing or not writable';
  }
  for (const [tool, args] of [
    ['losetup', ['--version']],
    ['mkfs.ext4', ['-V']],
    ['debugfs', ['-V']],
  ] as const) {
    try {
      await run(tool, [...args]);
    } catch {
      return `${tool} is not installed (util-linux / e2fsprogs)`;
    }
  }
  return undefined;
}

export class LoopDisks {
  /** Serialises work on one volume's disk (a create racing an attach). */
  readonly #busy = new Map<string, Promise<unknown>>();

  constructor(readonly dir: string) {}

  image(volume: string): string {
    return join(this.dir, `${volume}.img`);
  }

  device(volume: string): string {
    return join(this.dir, `${volume}.dev`);
  }

  async has(volume: string): Promise<boolean> {
    return access(this.image(volume)).then(
      () => true,
      () => false,
    );
  }

  /**
   * The disk of `volume`, created (`sizeGb`, empty ext4 owned by the agent) if it does not exist,
   * attached to a loop device; returns the device symlink the volume mounts.
   */
  ensure(volume: string, sizeGb: number): Promise<string> {
    return this.#serial(volume, async () => {
      if (!(await this.has(volume))) await this.#create(volume, sizeGb);
      await this.#attach(volume);
      return this.device(volume);
    });
  }

  /** Re-attaches an existing disk (after a host reboot); a volume without one is left alone. */
  attach(volume: string): Promise<void> {
    return this.#serial(volume, async () => {
      if (await this.has(volume)) await this.#attach(volume);
    });
  }

  /**
   * Once its volume is mounted (the container runs), the loop device is detached lazily: the
   * kernel marks it autoclear and frees it at the unmount, so no device outlives its container
   * (even one removed behind the operator's back); the next start attaches again.
   */
  detachWhenUnmounted(volume: string): Promise<void> {
    return this.#serial(volume, async () => {
      for (const dev of await this.#devicesOf(volume)) await run('losetup', ['-d', dev]).catch(() => {});
    });
  }

  /** Detaches and deletes the disk (after its volume is removed); missing is fine. */
  release(volume: string): Promise<void> {
    return this.#serial(volume, async () => {
      for (const dev of await this.#devicesOf(volume)) await run('losetup', ['-d', dev]).catch(() => {});
      await rm(this.device(volume), { force: true });
      await rm(this.image(volume), { force: true });
    });
  }

  async #create(volume: string, sizeGb: number): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const img = this.image(volume);
    const tmp = `${img}.tmp`;
    try {
      const fh = await open(tmp, 'w', 0o600);
      try {
        await fh.truncate(sizeGb * 1024 ** 3);
      } finally {
        await fh.close();
      }
      // -m 0: no blocks reserved for root (the agent is not root); lazy init keeps it fast.
      await run('mkfs.ext4', [
        '-q',
        '-F',
        '-m',
        '0',
        '-E',
        `root_owner=${AGENT_UID}:${AGENT_UID},lazy_itable_init=1,lazy_journal_init=1`,
        tmp,
      ]);
      // An empty root, so the engine copies the image's /home/agent in on first mount.
      await run('debugfs', ['-w', '-R', 'rmdir lost+found', tmp]);
      await rename(tmp, img);
    } catch (e) {
      await rm(tmp, { force: true });
      throw new Error(`could not create the ${sizeGb} GB workspace disk: ${(e as Error).message}`);
    }
  }

  async #devicesOf(volume: string): Promise<string[]> {
    const { stdout } = await run('losetup', ['-j', this.image(volume)]).catch(() => ({ stdout: '' }));
    return stdout
      .split('\n')
      .map((l) => l.split(':')[0]!.trim())
      .filter((d) => d.startsWith('/dev/loop'));
  }

  async #attach(volume: string): Promise<void> {
    let dev = (await this.#devicesOf(volume))[0];
    if (!dev) dev = (await run('losetup', ['--find', '--show', this.image(volume)])).stdout.trim();
    const link = this.device(volume);
    await rm(`${link}.tmp`, { force: true });
    await symlink(dev, `${link}.tmp`);
    await rename(`${link}.tmp`, link);
  }

  #serial<T>(volume: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#busy.get(volume) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => {});
    this.#busy.set(volume, tail);
    void tail.then(() => {
      if (this.#busy.get(volume) === tail) this.#busy.delete(volume);
    });
    return next;
  }
}
