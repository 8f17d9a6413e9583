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
// Operators run the bundle users run (blueprint-bin/dist/main.mjs; --tsx: src/main.ts under tsx)
// and follow the chain over WebSocket (WS_RPC_URL), as a production operator should.
// Run: npx tsx bench/e2e.bench.ts [--n 20] [--burst 20] [--pool-n 10] [--health-timeout-ms 30000] [--tsx]
import { loadavg } from 'node:os';
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import type { Address, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  buildCreateRequest,
  decodeCreateOutput,
  encodeCreateInput,
  JOB_SANDBOX_CREATE,
} from '../client/index.ts';
import { Chain, chainFloorOnce, operatorRssMiB, sideService } from './lib/chain.ts';
import { figure, median, p99 } from './lib/figures.ts';
import { type FloorShape, floorOnce as floorRun, floorStart } from './lib/floor.ts';
import { BenchRun, buildBins } from './lib/operators.ts';
import { type CallSeen, createTimeline } from './lib/timeline.ts';

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
/** --tsx: the operators run src/main.ts under tsx instead of the bundle users run. */
const VIA = process.argv.includes('--tsx') ? 'main' : 'bundle';
const run = new BenchRun('e2e-bench');
const CPU = 1;
const MEMORY_MB = 256;
/** Cold creates ask for this (never the pool's shape); the floor container gets MEMORY_MB. */
const COLD_MEMORY_MB = MEMORY_MB - 1;
const SHAPE: FloorShape = {
  run: run.id,
  labels: run.labels,
  runLabel: run.label,
  cpu: CPU,
  memoryMb: MEMORY_MB,
};
const floorOnce = (image: string, i: number) => floorRun(image, i, SHAPE);
const ops = run.ops;
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
  if (VIA === 'bundle') buildBins('operator');
  const info = await run.startDevnet();
  const extra = {
    SANDBOX_WARM_POOL: `${POOL}`,
    SANDBOX_DEFAULT_CPU_CORES: `${CPU}`,
    SANDBOX_DEFAULT_MEMORY_MB: `${MEMORY_MB}`,
    SANDBOX_DEFAULT_DISK_GB: '1',
    ...(HEALTH_TIMEOUT_MS ? { SANDBOX_HEALTH_TIMEOUT_MS: `${HEALTH_TIMEOUT_MS}` } : {}),
  };
  await Promise.all([
    run.startOperator('operator1', image, extra, VIA),
    run.startOperator('operator2', image, extra, VIA),
  ]);
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
  const coldCalls: CallSeen[] = [];
  const wall = (t: number) => performance.timeOrigin + t;
  for (let i = 0; i < N; i++) {
    floor.push(await floorOnce(image, i));
    const s = await chain.submit(JOB_SANDBOX_CREATE, createInputs(i));
    const r = (await chain.results([s.callId], s.block)).get(s.callId)!;
    ours.push(r.seenAt - s.minedAt);
    coldCalls.push({ callId: s.callId, minedWall: wall(s.minedAt), seenWall: wall(r.seenAt) });
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
  const sent = await chain.submitInOneBlock(
    JOB_SANDBOX_CREATE,
    Array.from({ length: BURST }, (_, i) => createInputs(100 + i)),
  );
  const t0 = sent.minedAt;
  const burstBlock = sent.block;
  const blocks = { size: sent.blocks };
  const calls = sent.callIds;
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
  // Until the last /health answer: the removals come after it.
  const b0 = performance.now();
  const started = await Promise.all(
    Array.from({ length: BURST }, (_, i) => floorStart(image, 200 + i, SHAPE)),
  );
  const burstFloorMs = Math.max(...started.map((f) => f.healthyAt)) - b0;
  await Promise.all(started.map((f) => f.remove()));

  // (4): warm-pool claims on chain, interleaved with the chain's floor on the side service.
  const side = await sideService(chain);
  await chainFloorOnce(chain, side, createInputs(999, MEMORY_MB));
  const poolOurs: number[] = [];
  const poolCalls: CallSeen[] = [];
  const chainFloor: number[] = [];
  for (let i = 0; i < POOL_N; i++) {
    await poolsFull();
    chainFloor.push(await chainFloorOnce(chain, side, createInputs(1000 + i, MEMORY_MB)));
    const s = await chain.submit(JOB_SANDBOX_CREATE, createInputs(300 + i, MEMORY_MB));
    const r = (await chain.results([s.callId], s.block)).get(s.callId)!;
    poolOurs.push(r.seenAt - s.minedAt);
    poolCalls.push({ callId: s.callId, minedWall: wall(s.minedAt), seenWall: wall(r.seenAt) });
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
  for (const l of createTimeline(
    ops.map((o) => o.logFile),
    coldCalls,
  ))
    console.log(l);
  // The same split for the warm-pool creates: what a claim on chain adds to the chain's own floor.
  console.log('warm-pool creates on chain, the same split:');
  for (const l of createTimeline(
    ops.map((o) => o.logFile),
    poolCalls,
  ))
    console.log(l);
  console.log(
    `burst: ${BURST} creates mined in ${blocks.size} block(s) (#${burstBlock}); all ${BURST} results mined after ${fmt(burstMs)}` +
      `; ${ready.length} ready, ${failures.length} failed` +
      (ready.length
        ? ` (ready per call: median ${fmt(quantile(ready, 0.5))}, p99 ${fmt(quantile(ready, 0.99))})`
        : ''),
  );
  if (failures.length)
    console.log(`burst failures (operator logs kept in ${run.keptLogs()}):\n${failures.join('\n')}`);
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
  const coldMet = mo <= 1.1 * mf && op99 <= 1.2 * fp99;
  figure({
    id: 'cold-onchain',
    name: 'cold create-to-ready on chain (submitJob mined -> result mined)',
    unit: 'ms',
    n: N,
    median: mo,
    p99: op99,
    floor: { name: 'docker run -> /health of the same image', median: mf, p99: fp99 },
    target: {
      text: 'cold create-to-ready <= 1.10x the floor median, <= 1.20x p99',
      met: coldMet,
      ...(coldMet
        ? {}
        : {
            why: `median ${(mo / mf).toFixed(2)}x, p99 ${(op99 / fp99).toFixed(2)}x: the chain (job seen, result mined; its floor is ${fmt(mc)} median) and provisioning inside the operator (its phases: the timeline in this bench's output)`,
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
  const poolMet = mp <= mc + 30;
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
      text: 'on-chain create with a warm pool <= chain floor + 30 ms, median',
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
    if (ops.length) console.error(`operator logs kept in ${run.keptLogs()}`);
    process.exitCode = 1;
  })
  .finally(() => run.cleanup());
