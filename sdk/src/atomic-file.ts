// Crash-safe small-file writes: write a temp file, fsync it, rename over the target, fsync the dir.
// The temp file is a new file of our own: an unguessable name opened O_CREAT|O_EXCL|O_NOFOLLOW, so a
// local user who can write the directory cannot redirect the content (a key, a session token)
// through a symlink or a file planted at the temp name.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

/** Creates `path` as a new regular file with exactly `mode`; fails (EEXIST) if anything, a symlink included, is there. */
export async function createExclusive(path: string, mode: number): Promise<FileHandle> {
  const fh = await open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
  try {
    await fh.chmod(mode); // the umask may have taken bits off; never adds any here
  } catch (e) {
    await fh.close();
    throw e;
  }
  return fh;
}

/** After this resolves the new content survives a kill -9 or power loss; a reader sees old or new, never half. */
export async function writeFileAtomic(path: string, content: string, mode = 0o600): Promise<void> {
  const tmp = `${path}.tmp-${randomBytes(12).toString('hex')}`;
  const fh = await createExclusive(tmp, mode);
  try {
    try {
      await fh.writeFile(content);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  // The rename itself is durable only once the directory entry is flushed.
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
