// Benchmark: cloud mode end to end on a private devnet (anvil + deployed contracts) with both
// operator PROGRAMS (blueprint-bin, TEST_MODE, own DATA_DIRs and ports) on the real Docker engine.
// (1) on-chain create-to-ready: submitJob mined -> JobResultSubmitted mined (the operator posts a
//     create result only once the sandbox runs and its sidecar answers /health), N sequential
//     creates, each deleted with job 1 before the next;
// (2) the floor, interleaved in the same run: `docker run -d` of the same image (same caps, limits,
//     volume, loopback port, sidecar env) polled with node:http until /health answers;
// (3) a burst: BURST job-0 calls mined in ONE block (automine off, explicit nonces), then the time
//     from that block to every result mined, next to BURST concurrent floors (docker run -> /health);
// (4) warm pool (both operators run SANDBOX_WARM_POOL=2 of the shape the pool creates ask for;
//     the cold creates ask 1 MB less, so they never claim): on-chain create-to-ready of a claim,
//     interleaved with the chain's own floor: the same submitJob on a side service of the same
//     blueprint that no operator program serves, mined -> its submitResult (sent by the bench as
//     that service's operator the moment the job's receipt is seen) mined;
// (5) the operator programs' RSS at the end, with how many sandboxes each ran at its peak.
// Operators follow the chain over WebSocket (WS_RPC_URL), as a production operator should.
// Run: npx tsx bench/e2e.bench.ts [--n 20] [--burst 20] [--pool-n 10] [--health-timeout-ms 30000]
import { type ChildProcess, execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  devnetOperatorEnv,
  operatorReady,
  spawnOperator,
  stopOperator,
} from '@agent-sandbox/blueprint-bin/testing';
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import { type StartedDevnet, startDevnet } from '@agent-sandbox/devnet';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import type { Address, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  buildCreateRequest,
  decodeCreateOutput,
  encodeCreateInput,
  JOB_SANDBOX_CREATE,
} from '../client/index.ts';
import { SIDECAR_CAPS } from '../runtime/src/docker/container-spec.ts';
import { probeHealth } from '../runtime/src/docker/health.ts';
import { Chain, chainFloorOnce, operatorRssMiB, sideService } from './lib/chain.ts';
import { figure, median, p99 } from './lib/figures.ts';

const exec = promisify(execFile);
const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg('n', 20);
const BURST = arg('burst', 20);
const POOL_N = arg('pool-n', 10);
const POOL = 2;
/** The operator's SANDBOX_HEALTH_TIMEOUT_MS; 0 keeps the operator's default (30 s). */
const HEALTH_TIMEOUT_MS = arg('health-timeout-ms', 0);
const ROOT = resolve(import.meta.dirname, '..');
const RUN = `e2e-bench-${process.pid}-${Date.now().toString(36)}`;
const RUN_LABEL = `agent-sandbox.bench.run=${RUN}`;
const LABELS = ['agent-sandbox.test=1', 'agent-sandbox.bench=1', RUN_LABEL];
const CPU = 1;
const MEMORY_MB = 256;
/** Cold creates ask for this (never the pool's shape); the floor container gets MEMORY_MB. */
const COLD_MEMORY_MB = MEMORY_MB - 1;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const fmt = (x: number) => `${x.toFixed(1)} ms`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => res(port));
    });
  });
}

interface Op {
  role: 'operator1' | 'operator2';
  child: ChildProcess;
  logFile: string;
  url: string;
}

const work = mkdtempSync(join(tmpdir(), `${RUN}-`));
let devnet: StartedDevnet | undefined;
const ops: Op[] = [];

/** Starts `agent-sandbox-operator run` for a devnet operator; resolves when its API is ready. */
async function startOperator(role: Op['role'], info: StartedDevnet['info'], image: string): Promise<Op> {
  const dataDir = join(work, role);
  const key = join(work, `${role}.key`);
  writeFileSync(key, `${info.accounts[role].privateKey}\n`, { mode: 0o600 });
  const logFile = join(work, `${role}.log`);
  const fd = openSync(logFile, 'a');
  const env = devnetOperatorEnv(
    {
      devnet: info,
      blueprintId: info.blueprints.cloud,
      serviceId: info.services.cloud,
      dataDir,
      keyFile: key,
      port: await freePort(),
      operatorId: `${RUN}-${role}`,
      image,
      labels: LABELS.join(','),
      extra: {
        LOG_LEVEL: 'info',
        WS_RPC_URL: info.rpcUrl.replace(/^http/, 'ws'),
        SANDBOX_WARM_POOL: `${POOL}`,
        SANDBOX_DEFAULT_CPU_CORES: `${CPU}`,
        SANDBOX_DEFAULT_MEMORY_MB: `${MEMORY_MB}`,
        SANDBOX_DEFAULT_DISK_GB: '1',
        ...(HEALTH_TIMEOUT_MS ? { SANDBOX_HEALTH_TIMEOUT_MS: `${HEALTH_TIMEOUT_MS}` } : {}),
      },
    },
    randomBytes(32).toString('hex'),
  );
  // dieWithParent: the kernel TERMs the operator if this process dies, even by SIGKILL (no orphans).
  const child = spawnOperator({ env, cwd: ROOT, stderr: fd, dieWithParent: true });
  const op: Op = { role, child, logFile, url: '' };
  ops.push(op);
  op.url = await operatorReady(child, {
    name: role,
    timeoutMs: 120_000,
    log: () => `see ${logFile}\n${readFileSync(logFile, 'utf8').slice(-2000)}`,
  });
  return op;
}

function stopOp(op: Op): Promise<void> {
  return stopOperator(op.child);
}

/** Removes this run's containers and volumes, one by one, re-listing until none is left. */
async function removeContainers(): Promise<number> {
  const list = async (kind: 'ps' | 'volume') => {
    const args = kind === 'ps' ? ['ps', '-aq'] : ['volume', 'ls', '-q'];
    const { stdout } = await exec('docker', [...args, '--filter', `label=${RUN_LABEL}`]);
    return stdout.split('\n').filter(Boolean);
  };
  let removed = 0;
  for (let round = 0; round < 5; round++) {
    const ids = await list('ps');
    const vols = await list('volume');
    if (!ids.length && !vols.length) break;
    for (const id of ids)
      await exec('docker', ['rm', '-f', '-v', id]).then(
        () => removed++,
        () => {},
      );
    for (const v of vols) await exec('docker', ['volume', 'rm', '-f', v]).catch(() => {});
    await sleep(500);
  }
  return removed;
}

/** Copies the operators' logs out of the work dir (removed at exit), for a failure to be read. */
function keptLogs(): string {
  const dir = join(tmpdir(), `${RUN}-logs`);
  mkdirSync(dir, { recursive: true });
  for (const op of ops) copyFileSync(op.logFile, join(dir, `${op.role}.log`));
  return dir;
}

let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const op of [...ops].reverse()) await stopOp(op).catch(() => {});
    const n = await removeContainers().catch(() => 0);
    if (n) console.error(`removed ${n} container(s)`);
    await devnet?.stop().catch(() => {});
    rmSync(work, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  // `on`, not `once`: a Ctrl-C reaches npx/tsx too, which relay it, and a second SIGINT must not
  // kill this process halfway through its clean-up.
  process.on(sig, () => {
    if (cleaning) return;
    console.error(`\n${sig}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** The floor: `docker run -d` of the same sandbox container, then GET /health until it answers. */
async function floorOnce(image: string, i: number): Promise<number> {
  const port = await freePort();
  const name = `${RUN}-floor-${i}`;
  const t0 = performance.now();
  await exec('docker', [
    'run',
    '-d',
    '--name',
    name,
    ...LABELS.flatMap((l) => ['--label', l]),
    '--cap-drop',
    'ALL',
    ...SIDECAR_CAPS.flatMap((c) => ['--cap-add', c]),
    '--security-opt',
    'no-new-privileges:true',
    '--tmpfs',
    '/tmp:rw,nosuid,nodev,size=256m',
    '--cpus',
    `${CPU}`,
    '--memory',
    `${MEMORY_MB}m`,
    '--mount',
    `type=volume,source=${name},target=/home/agent,volume-label=${RUN_LABEL}`,
    '-p',
    `127.0.0.1:${port}:8080`,
    '-e',
    'SIDECAR_PORT=8080',
    '-e',
    `SIDECAR_AUTH_TOKEN=${randomBytes(32).toString('hex')}`,
    '-e',
    'AGENT_WORKSPACE_ROOT=/home/agent',
    '-e',
    'AGENT_SUBPROCESS_UID=1000',
    '-e',
    'AGENT_SUBPROCESS_GID=1000',
    image,
  ]);
  const deadline = Date.now() + 120_000;
  while (!(await probeHealth({ host: '127.0.0.1', port }, 1000))) {
    if (Date.now() > deadline) throw new Error(`floor container ${name} never answered /health`);
    await sleep(10);
  }
  const dt = performance.now() - t0;
  await exec('docker', ['rm', '-f', '-v', name]);
  await exec('docker', ['volume', 'rm', '-f', name]).catch(() => {});
  return dt;
}

const createInputs = (i: number, memoryMb = COLD_MEMORY_MB) =>
  encodeCreateInput(
    buildCreateRequest({ name: `bench-${i}`, cpu_cores: CPU, memory_mb: memoryMb, disk_gb: 1 }),
  );

/** Waits until every operator's warm pool is full again (its metrics say so). */
async function poolsFull(): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (const op of ops) {
    for (;;) {
      const text = await (await fetch(`${op.url}/metrics`)).text();
      const n = Number(/^agent_sandbox_warm_pool_ready (\S+)$/m.exec(text)?.[1] ?? 0);
      if (n >= POOL) break;
      if (Date.now() > deadline) throw new Error(`${op.role}'s warm pool never refilled (${n}/${POOL})`);
      await sleep(20);
    }
  }
}

function sandboxIdOf(output: Hex, what: string): string {
  const out = decodeCreateOutput(output);
  if (!out.sandboxId) throw new Error(`${what}: provisioning failed: ${JSON.stringify(out.json)}`);
  // The result is posted once the sidecar answered /health; its document says so.
  if (out.json['state'] !== 'running')
    throw new Error(`${what}: result says state ${String(out.json['state'])}`);
  return out.sandboxId;
}

async function main(): Promise<void> {
  const loadStart = load();
  console.log(`load average at start: ${loadStart}`);
  const { tag: image } = await ensureSandboxImage({
    onProgress: (l) => process.stderr.write(`[image] ${l}\n`),
  });
  devnet = await startDevnet({ port: 0, stateFile: join(work, 'devnet.json'), reuse: false, detach: false });
  const info = devnet.info;
  await Promise.all([startOperator('operator1', info, image), startOperator('operator2', info, image)]);
  const chain = new Chain(info, privateKeyToAccount(info.accounts.user.privateKey));
  console.error(`devnet ${info.rpcUrl}, cloud service ${info.services.cloud}, image ${image}`);

  // Warm-up on both paths (first container, caches), not measured.
  {
    const s = await chain.submit(JOB_SANDBOX_CREATE, createInputs(-1));
    const r = (await chain.results([s.callId], s.block)).get(s.callId)!;
    await chain.deleteAll([sandboxIdOf(r.output, 'warm-up')]);
    await floorOnce(image, -1);
  }

  // (1) + (2): sequential, interleaved with the floor.
  const ours: number[] = [];
  const floor: number[] = [];
  for (let i = 0; i < N; i++) {
    floor.push(await floorOnce(image, i));
    const s = await chain.submit(JOB_SANDBOX_CREATE, createInputs(i));
    const r = (await chain.results([s.callId], s.block)).get(s.callId)!;
    ours.push(r.seenAt - s.minedAt);
    await chain.deleteAll([sandboxIdOf(r.output, `create ${i}`)]);
    process.stderr.write(`  ${i + 1}/${N}: ours ${fmt(ours.at(-1)!)}, floor ${fmt(floor.at(-1)!)}\n`);
  }

  // (3): BURST creates in one block. Capacity is per blueprint (15 on the devnet): the blueprint
  // owner (the deployer) raises both operators' capacity first.
  const deployer = privateKeyToAccount(info.accounts.deployer.privateKey);
  for (const role of ['operator1', 'operator2'] as const) {
    const hash = await chain.wallet(deployer).writeContract({
      address: info.contracts.cloud,
      abi: agentSandboxBlueprintAbi,
      functionName: 'setOperatorCapacity',
      args: [info.accounts[role].address as Address, BURST],
      chain: null,
    });
    await chain.pub.waitForTransactionReceipt({ hash, pollingInterval: 10 });
  }
  const data = Array.from({ length: BURST }, (_, i) =>
    chain.callData(JOB_SANDBOX_CREATE, createInputs(100 + i)),
  );
  const gas = await chain.gasFor(data[0]!);
  const nonce = await chain.pub.getTransactionCount({ address: chain.user.address, blockTag: 'pending' });
  const hashes: Hex[] = [];
  await chain.rpc('evm_setAutomine', [false]);
  try {
    for (let i = 0; i < BURST; i++) {
      hashes.push(
        await chain.wallet(chain.user).sendTransaction({
          to: info.contracts.tangle,
          data: data[i]!,
          gas,
          nonce: nonce + i,
          chain: null,
        }),
      );
    }
    await chain.rpc('evm_mine');
  } finally {
    await chain.rpc('evm_setAutomine', [true]);
  }
  const t0 = performance.now();
  const receipts = await Promise.all(
    hashes.map((hash) => chain.pub.waitForTransactionReceipt({ hash, pollingInterval: 10 })),
  );
  const blocks = new Set(receipts.map((r) => r.blockNumber));
  const failed = receipts.filter((r) => r.status !== 'success').length;
  if (failed) throw new Error(`${failed} of ${BURST} burst submitJob txs reverted`);
  const burstBlock = receipts[0]!.blockNumber;
  const calls = receipts.map((r) => chain.callIdOf(r.logs));
  const res = await chain.results(calls, burstBlock, 600_000);
  const burstMs = Math.max(...[...res.values()].map((r) => r.seenAt)) - t0;
  const ready: number[] = [];
  const burstIds: string[] = [];
  const failures: string[] = [];
  calls.forEach((c, i) => {
    const r = res.get(c)!;
    try {
      burstIds.push(sandboxIdOf(r.output, `burst call ${c}`));
      ready.push(r.seenAt - t0);
    } catch (e) {
      failures.push(`  call ${c} (#${i}): ${(e as Error).message}`);
    }
  });
  await chain.deleteAll(burstIds);

  // (3) floor: BURST concurrent docker run -> /health.
  const b0 = performance.now();
  await Promise.all(Array.from({ length: BURST }, (_, i) => floorOnce(image, 200 + i)));
  const burstFloorMs = performance.now() - b0;

  // (4): warm-pool claims on chain, interleaved with the chain's floor on the side service.
  const side = await sideService(chain);
  await chainFloorOnce(chain, side, createInputs(999, MEMORY_MB));
  const poolOurs: number[] = [];
  const chainFloor: number[] = [];
  for (let i = 0; i < POOL_N; i++) {
    await poolsFull();
    chainFloor.push(await chainFloorOnce(chain, side, createInputs(1000 + i, MEMORY_MB)));
    const s = await chain.submit(JOB_SANDBOX_CREATE, createInputs(300 + i, MEMORY_MB));
    const r = (await chain.results([s.callId], s.block)).get(s.callId)!;
    poolOurs.push(r.seenAt - s.minedAt);
    await chain.deleteAll([sandboxIdOf(r.output, `pool create ${i}`)]);
    process.stderr.write(
      `  pool ${i + 1}/${POOL_N}: ours ${fmt(poolOurs.at(-1)!)}, chain floor ${fmt(chainFloor.at(-1)!)}\n`,
    );
  }
  const rss = ops.map((op) => ({ role: op.role, mib: operatorRssMiB(op.child.pid!) }));

  const loadEnd = load();
  const mo = quantile(ours, 0.5);
  const mf = quantile(floor, 0.5);
  console.log(`\ncloud mode end to end (2 operators, real engine, anvil), n=${N}, burst=${BURST}`);
  console.log(
    `create-to-ready on chain (submitJob mined -> result mined): median ${fmt(mo)}, p99 ${fmt(quantile(ours, 0.99))}`,
  );
  console.log(
    `floor (docker run -> /health answers):               median ${fmt(mf)}, p99 ${fmt(quantile(floor, 0.99))}`,
  );
  console.log(`ratio (median ours / median floor): ${(mo / mf).toFixed(2)}x`);
  console.log(
    `burst: ${BURST} creates mined in ${blocks.size} block(s) (#${burstBlock}); all ${BURST} results mined after ${fmt(burstMs)}` +
      `; ${ready.length} ready, ${failures.length} failed` +
      (ready.length
        ? ` (ready per call: median ${fmt(quantile(ready, 0.5))}, p99 ${fmt(quantile(ready, 0.99))})`
        : ''),
  );
  if (failures.length)
    console.log(`burst failures (operator logs kept in ${keptLogs()}):\n${failures.join('\n')}`);
  console.log(
    `burst floor: ${BURST} concurrent docker run -> /health: all answered after ${fmt(burstFloorMs)}`,
  );
  const mp = median(poolOurs);
  const mc = median(chainFloor);
  console.log(
    `warm pool (SANDBOX_WARM_POOL=${POOL}), n=${POOL_N}: on-chain create-to-ready median ${fmt(mp)}, p99 ${fmt(p99(poolOurs))}; ` +
      `chain floor (submitJob mined -> submitResult mined) median ${fmt(mc)}, p99 ${fmt(p99(chainFloor))}; over the floor ${fmt(mp - mc)}`,
  );
  console.log(`operator RSS at the end: ${rss.map((r) => `${r.role} ${r.mib.toFixed(0)} MiB`).join(', ')}`);
  console.log(`load average: start ${loadStart}; end ${loadEnd}`);

  const op99 = p99(ours);
  const fp99 = p99(floor);
  const coldMet = mo <= 1.2 * mf && op99 <= 1.2 * fp99;
  figure({
    id: 'cold-onchain',
    name: 'cold create-to-ready on chain (submitJob mined -> result mined)',
    unit: 'ms',
    n: N,
    median: mo,
    p99: op99,
    floor: { name: 'docker run -> /health of the same image', median: mf, p99: fp99 },
    target: {
      text: 'cold create-to-ready <= 1.2x the floor, median and p99',
      met: coldMet,
      ...(coldMet
        ? {}
        : {
            why: `median ${(mo / mf).toFixed(2)}x, p99 ${(op99 / fp99).toFixed(2)}x: on top of the container's start come the chain (job seen, result mined: the chain floor below is ${fmt(mc)} median) and the env delivery`,
          }),
    },
  });
  const burstMet = failures.length === 0 && burstMs <= 1.2 * burstFloorMs;
  figure({
    id: 'burst-20',
    name: `${BURST} creates mined in one block -> all results mined`,
    unit: 'ms',
    n: BURST,
    median: burstMs,
    floor: { name: `${BURST} concurrent docker run -> /health`, median: burstFloorMs },
    target: {
      text: `${BURST} creates in one block all ready <= 1.2x ${BURST} concurrent docker run -> /health`,
      met: burstMet,
      ...(burstMet
        ? {}
        : { why: failures.length ? `${failures.length} failed` : `${(burstMs / burstFloorMs).toFixed(2)}x` }),
    },
  });
  const poolMet = mp <= mc + 150;
  figure({
    id: 'pool-onchain',
    name: `on-chain create-to-ready with a warm pool (SANDBOX_WARM_POOL=${POOL})`,
    unit: 'ms',
    n: POOL_N,
    median: mp,
    p99: p99(poolOurs),
    floor: {
      name: 'chain floor: submitJob mined -> empty submitResult mined',
      median: mc,
      p99: p99(chainFloor),
    },
    target: {
      text: 'on-chain create with a warm pool <= chain floor + 150 ms, median',
      met: poolMet,
      ...(poolMet ? {} : { why: `${fmt(mp - mc)} over the chain floor` }),
    },
  });
  for (const r of rss) {
    figure({
      id: `operator-rss-${r.role}`,
      name: `${r.role} program RSS at the end (after ${BURST}-create burst, pool of ${POOL})`,
      unit: 'MiB',
      median: r.mib,
    });
  }
}

main()
  .catch((e) => {
    console.error(`e2e bench failed: ${(e as Error).stack ?? e}`);
    if (ops.length) console.error(`operator logs kept in ${keptLogs()}`);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
