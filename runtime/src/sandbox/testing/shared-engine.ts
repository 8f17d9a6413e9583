// Test helpers (serial stage only, root): the shared Docker engine killed (-9) and started again
// as scripts/ensure-toolchain.sh starts it. Killing it breaks every other test using the engine:
// only `*.serial-test.ts` files, which run alone after the main run, may use these.
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function engineAnswers(): Promise<boolean> {
  return run('docker', ['info'], { timeout: 10_000 }).then(
    () => true,
    () => false,
  );
}

async function dockerdPid(): Promise<number | undefined> {
  const out = await run('pgrep', ['-x', 'dockerd']).catch(() => ({ stdout: '' }));
  const pids = out.stdout
    .trim()
    .split('\n')
    .map(Number)
    .filter((p) => Number.isInteger(p) && p > 0);
  if (pids.length > 1)
    throw new Error(
      `several dockerd processes (${pids.join(', ')}); this test kills the shared one only when it is alone`,
    );
  return pids[0];
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Starts dockerd exactly as scripts/ensure-toolchain.sh does, detached from this process. */
export async function startEngine(): Promise<void> {
  const sh = spawn('sh', ['-c', 'nohup dockerd >>/var/log/dockerd.log 2>&1 &'], {
    detached: true,
    stdio: 'ignore',
  });
  sh.unref();
  for (let i = 0; i < 240; i++) {
    if (await engineAnswers()) return;
    await sleep(500);
  }
  throw new Error('dockerd did not come up in 120 s; see /var/log/dockerd.log');
}

/** kill -9 of dockerd; resolves once it is gone. */
export async function killEngine(): Promise<void> {
  const pid = await dockerdPid();
  if (!pid) throw new Error('no dockerd process found (this test needs a dockerd it may kill)');
  process.kill(pid, 'SIGKILL');
  const deadline = Date.now() + 60_000;
  while (alive(pid)) {
    if (Date.now() > deadline) throw new Error(`dockerd ${pid} still alive 60 s after SIGKILL`);
    await sleep(100);
  }
}
