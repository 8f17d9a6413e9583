// Benchmark: sandboxes under gVisor (runsc) next to runc, in one interleaved run on the real
// engine with the real sandbox image (runc is the floor; each figure is runsc / runc):
// (1) create-to-ready (SandboxManager.create → healthy sidecar with its env), N creates of each,
//     alternating which runtime goes first;
// (2) exec round trip: one authenticated sidecar exec of `true`, R per sandbox;
// (3) CPU-bound: a Python loop of 3·10⁶ multiplications (sentry overhead on pure user code);
// (4) syscall-heavy: `git status` on a tree of FILES files (an lstat per file, plus reads), and
//     `find /usr -type f | wc -l` (getdents + stat over the image's /usr).
// The 1-minute load average is printed with every figure (the machine is shared).
// Run: npx tsx bench/gvisor.bench.ts [--n 6] [--r 20] [--files 5000]
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeOperatorObjects, sidecarExec } from '@agent-sandbox/runtime/testing';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import { Registry } from 'prom-client';
import { DockerDriver } from '../runtime/src/docker/driver.ts';
import { SandboxManager } from '../runtime/src/sandbox/manager.ts';
import type { SandboxRuntime } from '../runtime/src/sandbox/runtimes.ts';
import { EncryptedStore } from '../runtime/src/store/index.ts';
import { figure, median, p99 } from './lib/figures.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg('n', 6);
const R = arg('r', 20);
const FILES = arg('files', 5000);
const RUNTIMES: SandboxRuntime[] = ['runc', 'runsc'];
const ms = (x: number) => `${x.toFixed(1)} ms`;
const load = () => loadavg()[0]!.toFixed(1);

type Samples = Record<SandboxRuntime, number[]>;
const samples = (): Samples => ({ runc: [], runsc: [] });

function report(id: string, name: string, s: Samples): void {
  const [c, g] = [median(s.runc), median(s.runsc)];
  console.log(
    `${name}: runc median ${ms(c)} p99 ${ms(p99(s.runc))} | runsc median ${ms(g)} p99 ${ms(p99(s.runsc))} | runsc/runc ${(g / c).toFixed(2)}x (load ${load()})`,
  );
  figure({
    id,
    name: `${name} under runsc (gVisor)`,
    unit: 'ms',
    n: s.runsc.length,
    median: g,
    p99: p99(s.runsc),
    floor: { name: `the same under runc`, median: c, p99: p99(s.runc) },
  });
}

async function main(): Promise<void> {
  const { tag: image } = await ensureSandboxImage({
    onProgress: (l) => process.stderr.write(`[image] ${l}\n`),
  });
  const dir = await mkdtemp(join(tmpdir(), 'asbx-bench-gv-'));
  const operatorId = `bench-${randomBytes(4).toString('hex')}`;
  const driver = new DockerDriver();
  const store = await EncryptedStore.open({
    dir: join(dir, 'store'),
    secret: randomBytes(32).toString('hex'),
  });
  const manager = await SandboxManager.open({
    config: {
      operatorId,
      image,
      snapshotDir: join(dir, 'snapshots'),
      extraLabels: { 'agent-sandbox.test': '1', 'agent-sandbox.bench': 'gvisor' },
      defaultMemoryMb: 512,
      healthTimeoutMs: 120_000,
      runtimesAllowed: ['runsc'],
    },
    store,
    registry: new Registry(),
    driver,
  });
  const owner = '0x00000000000000000000000000000000000000bf';
  let call = 0;
  const create = (runtime: SandboxRuntime) =>
    manager.create({ owner, serviceId: 1, callId: `gv-${++call}`, runtime });
  const timed = async (f: () => Promise<unknown>) => {
    const t0 = performance.now();
    await f();
    return performance.now() - t0;
  };
  console.log(
    `gVisor vs runc, load at start ${load()} (${N} creates, ${R} execs per runtime, ${FILES} files)`,
  );
  try {
    for (const rt of RUNTIMES) await manager.delete((await create(rt)).id); // warm-up
    const createMs = samples();
    for (let i = 0; i < N; i++) {
      for (const rt of i % 2 ? [...RUNTIMES].reverse() : RUNTIMES) {
        let id = '';
        createMs[rt].push(await timed(async () => (id = (await create(rt)).id)));
        await manager.delete(id);
      }
    }
    report('gvisor-create', 'create-to-ready', createMs);

    // One sandbox of each, both running for the rest; every sample alternates between them.
    const box = { runc: await create('runc'), runsc: await create('runsc') };
    const ep = (rt: SandboxRuntime) => manager.sidecarEndpoint(box[rt].id);
    const run = async (rt: SandboxRuntime, cmd: string) => {
      const r = await sidecarExec(ep(rt), cmd, 600_000);
      if (r.exitCode !== 0) throw new Error(`${rt}: ${cmd} exited ${r.exitCode}: ${r.stderr.slice(0, 300)}`);
      return r;
    };
    const each = async (id: string, name: string, cmd: string, n: number) => {
      const s = samples();
      for (let i = 0; i < n; i++) {
        for (const rt of i % 2 ? [...RUNTIMES].reverse() : RUNTIMES)
          s[rt].push(await timed(() => run(rt, cmd)));
      }
      report(id, name, s);
    };
    await each('gvisor-exec', 'exec round trip (true)', 'true', R);
    await each(
      'gvisor-cpu',
      'CPU-bound (python: 3e6 multiplications)',
      'python3 -c "s=0\nfor i in range(3000000): s+=i*i"',
      Math.max(3, Math.floor(R / 4)),
    );
    // The tree: FILES small files in 50 directories, committed, one changed (untimed set-up).
    const setup = `set -e; mkdir -p /home/agent/tree && cd /home/agent/tree && git init -q . && for d in $(seq 1 50); do mkdir d$d; for f in $(seq 1 ${Math.ceil(FILES / 50)}); do echo $d$f > d$d/f$f; done; done && git -c user.email=b@x -c user.name=b add -A && git -c user.email=b@x -c user.name=b commit -qm t && echo x >> d1/f1`;
    for (const rt of RUNTIMES) {
      const t = await timed(() => run(rt, setup));
      console.log(`  set-up of the ${FILES}-file git tree under ${rt}: ${ms(t)} (load ${load()})`);
    }
    await each(
      'gvisor-git-status',
      `git status (${FILES} files)`,
      'cd /home/agent/tree && git status --porcelain >/dev/null',
      Math.max(3, Math.floor(R / 2)),
    );
    await each(
      'gvisor-find',
      'find /usr -type f | wc -l',
      'find /usr -type f | wc -l >/dev/null',
      Math.max(3, Math.floor(R / 2)),
    );
    for (const rt of RUNTIMES) await manager.delete(box[rt].id);
  } finally {
    await manager.close();
    await store.close().catch(() => {});
    await removeOperatorObjects(driver, operatorId);
    await rm(dir, { recursive: true, force: true });
    console.log(`load at end ${load()}`);
  }
}

await main();
