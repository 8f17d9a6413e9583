// A cross-process lock so concurrent callers (test setup, CLI, other suites) never build the same image twice.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function withBuildLock<T>(name: string, onWait: () => void, fn: () => Promise<T>): Promise<T> {
  const dir = join(tmpdir(), `agent-sandbox-${name}.lock`);
  let told = false;
  for (;;) {
    try {
      await mkdir(dir);
      await writeFile(join(dir, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(await readFile(join(dir, 'pid'), 'utf8').catch(() => '0'));
      // A holder that died (or never wrote its pid after a grace period) leaves a stale lock.
      if (pid > 0 && !alive(pid)) {
        await rm(dir, { recursive: true, force: true });
        continue;
      }
      if (!told) {
        onWait();
        told = true;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    return await fn();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
