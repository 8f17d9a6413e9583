// Crash-safe small-file writes: write a temp file, fsync it, rename over the target, fsync the dir.
import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

/** After this resolves the new content survives a kill -9 or power loss; a reader sees old or new, never half. */
export async function writeFileAtomic(path: string, content: string, mode = 0o600): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const fh = await open(tmp, 'w', mode);
  try {
    await fh.writeFile(content);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
  // The rename itself is durable only once the directory entry is flushed.
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
