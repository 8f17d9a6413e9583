// Test helper (root only): a small real ext4 filesystem on a loop device, and a filler that takes
// every free block of it, as when something else fills the operator's disk.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SmallFs {
  /** The mount point. */
  dir: string;
  /** Writes a file until the filesystem refuses more (ENOSPC); returns how many bytes it took. */
  fill(): number;
  /** Removes the filler: the space is back. */
  unfill(): void;
  destroy(): void;
}

export function mountSmallFs(prefix: string, sizeMb: number): SmallFs {
  const base = mkdtempSync(join(tmpdir(), `${prefix}-`));
  const img = join(base, 'fs.img');
  const dir = join(base, 'mnt');
  execFileSync('truncate', ['-s', `${sizeMb}M`, img]);
  // No blocks reserved for root (the tests run as root and would write into them).
  execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', 'nodiscard', img]);
  execFileSync('mkdir', ['-p', dir]);
  execFileSync('mount', ['-o', 'loop', img, dir]);
  const filler = join(dir, 'filler');
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(64 * 1024, 0x66);
      let n = 0;
      try {
        for (let size = chunk.length; size >= 512; ) {
          try {
            n += writeSync(fd, chunk, 0, size);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
            size >>= 1; // the last blocks: smaller writes until not even 512 bytes fit
          }
        }
      } finally {
        closeSync(fd);
      }
      return n;
    },
    unfill() {
      rmSync(filler, { force: true });
    },
    destroy() {
      execFileSync('umount', ['-l', dir]);
      rmSync(base, { recursive: true, force: true });
    },
  };
}
