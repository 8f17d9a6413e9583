// Benchmark: one operator program (the bundle users run, blueprint-bin/dist/main.mjs) under many
// sandboxes, on a private devnet, serving a service of its own (operator1 alone, so every create is
// its own and its RSS is the figure):
// (1) N creates mined in ONE block -> every result mined, next to N concurrent `docker run` ->
//     `/health` of the same image (the floor, A B A: once before, once after; its "all answered"
//     time is the last /health answer, the removals come after it);
// (2) the operator program's RSS with the N running (after a settle), against 150 MiB;
// (3) churn: for --churn-minutes, LIVE sandboxes kept running while one is created and the oldest
//     deleted, over and over (each on chain); the program's RSS sampled every --sample-s seconds;
//     the slope (least squares over the samples after the first minute, MiB per hour) says whether
//     it leaks; the RSS low points (each window's minimum, what a GC leaves) are fitted too.
// Sandboxes ask for MEMORY_MB (128, the smallest allowed): N of the default 1 GiB shape would pass
// the host's memory budget, and the figure is the operator's cost per sandbox, not the limit's.
// --n 0: the churn only. --node-options "FLAGS": the operator program runs with NODE_OPTIONS=FLAGS
// (e.g. a V8 heap flag, to see what it does to the RSS).
// Run: npx tsx bench/scale.bench.ts [--n 100] [--churn-minutes 15] [--live 10] [--sample-s 20] [--node-options FLAGS]
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import type { Address } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  buildCreateRequest,
  decodeCreateOutput,
  encodeCreateInput,
  encodeDeleteInput,
  JOB_SANDBOX_CREATE,
  JOB_SANDBOX_DELETE,
} from '../client/index.ts';
import { Chain, operatorRssMiB, sideService } from './lib/chain.ts';
import { figure, median } from './lib/figures.ts';
import { type FloorShape, floorStart } from './lib/floor.ts';
import { BenchRun, buildBins } from './lib/operators.ts';
import { fitSlope, loadNow } from './lib/series.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg('n', 100);
const CHURN_MIN = arg('churn-minutes', 15);
const LIVE = arg('live', 10);
const SAMPLE_S = arg('sample-s', 20);
const NODE_OPTIONS = (() => {
  const i = process.argv.indexOf('--node-options');
  return i > 0 ? process.argv[i + 1] : undefined;
})();
const CPU = 1;
const MEMORY_MB = 128;
const RSS_TARGET = 150;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const s1 = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

const run = new BenchRun('scale-bench');
const SHAPE: FloorShape = {
  run: run.id,
  labels: run.labels,
  runLabel: run.label,
  cpu: CPU,
  memoryMb: MEMORY_MB,
  healthTimeoutMs: 600_000,
};
const inputs = (i: number) =>
  encodeCreateInput(
    buildCreateRequest({ name: `scale-${i}`, cpu_cores: CPU, memory_mb: MEMORY_MB, disk_gb: 1 }),
  );

/** N concurrent docker run -> /health: ms from the start to the last answer (removals after). */
async function floorBurst(image: string, base: number): Promise<number> {
  const t0 = performance.now();
  const started = await Promise.all(Array.from({ length: N }, (_, i) => floorStart(image, base + i, SHAPE)));
  const ms = Math.max(...started.map((f) => f.healthyAt)) - t0;
  await Promise.all(started.map((f) => f.remove()));
  return ms;
}

function idOf(output: `0x${string}`, what: string): string {
  const out = decodeCreateOutput(output);
  if (!out.sandboxId || out.json['state'] !== 'running')
    throw new Error(`${what}: not running: ${JSON.stringify(out.json).slice(0, 300)}`);
  return out.sandboxId;
}

/** (1) and (2): N creates in one block next to the floor (A B A), and the RSS with the N running. */
async function burst(chain: Chain, image: string, pid: number, idleRss: number): Promise<void> {
  // (1) A: floor, B: N creates in one block, A: floor.
  const floorA = await floorBurst(image, 0);
  console.log(
    `floor A: ${N} concurrent docker run -> /health: all answered after ${s1(floorA)}; load ${loadNow()}`,
  );
  const loadB = loadNow();
  const sent = await chain.submitInOneBlock(
    JOB_SANDBOX_CREATE,
    Array.from({ length: N }, (_, i) => inputs(i)),
  );
  const res = await chain.results(sent.callIds, sent.block, 900_000);
  const seen = [...res.values()].map((r) => r.seenAt - sent.minedAt);
  const burstMs = Math.max(...seen);
  const ids: string[] = [];
  const failures: string[] = [];
  for (const [c, r] of res) {
    try {
      ids.push(idOf(r.output, `call ${c}`));
    } catch (e) {
      failures.push((e as Error).message);
    }
  }
  console.log(
    `ours: ${N} creates mined in ${sent.blocks} block(s) -> all results mined after ${s1(burstMs)} (median result ${s1(median(seen))}); ${ids.length} running, ${failures.length} failed; load ${loadB} -> ${loadNow()}`,
  );
  if (failures.length) console.log(`  first failure: ${failures[0]}`);

  // (2) RSS with the N running, settled.
  await sleep(15_000);
  const rss100 = operatorRssMiB(pid);
  console.log(
    `operator1 RSS with ${ids.length} running (15 s settle): ${rss100.toFixed(0)} MiB; load ${loadNow()}`,
  );
  const del = await chain.submitInOneBlock(JOB_SANDBOX_DELETE, ids.map(encodeDeleteInput));
  await chain.results(del.callIds, del.block, 900_000);
  const floorB = await floorBurst(image, N);
  console.log(`floor B: all answered after ${s1(floorB)}; load ${loadNow()}`);
  const floor = (floorA + floorB) / 2;
  const ratio = burstMs / floor;
  const burstMet = failures.length === 0 && ratio <= 1.2;
  figure({
    id: 'concurrent-creates',
    name: `${N} creates mined in one block -> all results mined (one operator program)`,
    unit: 'ms',
    n: N,
    median: burstMs,
    floor: { name: `${N} concurrent docker run -> /health (mean of one before, one after)`, median: floor },
    target: {
      text: `${N} creates at once all ready <= 1.2x ${N} concurrent docker run -> /health`,
      met: burstMet,
      ...(burstMet ? {} : { why: failures.length ? `${failures.length} failed` : `${ratio.toFixed(2)}x` }),
    },
    note: `floors ${s1(floorA)} and ${s1(floorB)}; load ${loadB}`,
  });
  figure({
    id: 'rss-100',
    name: `operator program RSS (bundle) with ${ids.length} running sandboxes`,
    unit: 'MiB',
    median: rss100,
    target: {
      text: `<= ${RSS_TARGET} MiB`,
      met: rss100 <= RSS_TARGET && ids.length === N,
      ...(rss100 <= RSS_TARGET ? {} : { why: `${rss100.toFixed(0)} MiB` }),
    },
    note: `idle ${idleRss.toFixed(0)} MiB; +${((rss100 - idleRss) / Math.max(1, ids.length)).toFixed(2)} MiB per sandbox`,
  });
}

async function main(): Promise<void> {
  console.log(
    `scale bench: n=${N}, churn ${CHURN_MIN} min with ${LIVE} live${NODE_OPTIONS ? `, operator NODE_OPTIONS=${NODE_OPTIONS}` : ''}; load at start ${loadNow()}`,
  );
  buildBins('operator');
  const { tag: image } = await ensureSandboxImage({
    onProgress: (l) => process.stderr.write(`[image] ${l}\n`),
  });
  const info = await run.startDevnet();
  const user = privateKeyToAccount(info.accounts.user.privateKey);
  const service = await sideService(new Chain(info, user));
  const chain = new Chain(info, user, service);
  // Capacity is per blueprint (15 on the devnet): the blueprint owner raises operator1's.
  const deployer = privateKeyToAccount(info.accounts.deployer.privateKey);
  const hash = await chain.wallet(deployer).writeContract({
    address: info.contracts.cloud,
    abi: agentSandboxBlueprintAbi,
    functionName: 'setOperatorCapacity',
    args: [info.accounts.operator1.address as Address, N + LIVE + 10],
    chain: null,
  });
  const raised = await chain.pub.waitForTransactionReceipt({ hash, pollingInterval: 10 });
  // Unchecked, a refused raise would leave the devnet's capacity and fail the burst past it.
  if (raised.status !== 'success') throw new Error(`setOperatorCapacity reverted (${hash})`);
  const op = await run.startOperator('operator1', image, {
    SERVICE_ID: `${service}`,
    SANDBOX_DEFAULT_CPU_CORES: `${CPU}`,
    SANDBOX_DEFAULT_MEMORY_MB: `${MEMORY_MB}`,
    SANDBOX_DEFAULT_DISK_GB: '1',
    ...(NODE_OPTIONS ? { NODE_OPTIONS } : {}),
  });
  const pid = op.child.pid!;
  // Warm-up (first container of the run, caches), not measured.
  {
    const s = await chain.submit(JOB_SANDBOX_CREATE, inputs(-1));
    const r = (await chain.results([s.callId], s.block)).get(s.callId)!;
    await chain.deleteAll([idOf(r.output, 'warm-up')]);
  }
  await sleep(15_000);
  const idleRss = operatorRssMiB(pid);
  console.log(`operator1 RSS idle (15 s after the warm-up): ${idleRss.toFixed(0)} MiB; load ${loadNow()}`);

  if (N > 0) await burst(chain, image, pid, idleRss);

  // (3) churn.
  if (CHURN_MIN <= 0) return;
  const live: string[] = [];
  const samples: Array<{ t: number; mib: number }> = [];
  const t0 = performance.now();
  const endAt = t0 + CHURN_MIN * 60_000;
  let nextSample = t0;
  let cycles = 0;
  let i = 10_000;
  while (performance.now() < endAt) {
    const s = await chain.submit(JOB_SANDBOX_CREATE, inputs(i++));
    const r = (await chain.results([s.callId], s.block)).get(s.callId)!;
    live.push(idOf(r.output, `churn create ${i}`));
    if (live.length > LIVE) {
      await chain.deleteAll([live.shift()!]);
      cycles++;
    }
    if (performance.now() >= nextSample) {
      samples.push({ t: (performance.now() - t0) / 3_600_000, mib: operatorRssMiB(pid) });
      nextSample += SAMPLE_S * 1000;
      if (samples.length % 6 === 0)
        process.stderr.write(
          `  churn ${((performance.now() - t0) / 60_000).toFixed(1)} min: ${cycles} cycles, RSS ${samples.at(-1)!.mib.toFixed(0)} MiB, load ${loadNow()}\n`,
        );
    }
  }
  await chain.deleteAll(live);
  const minutes = (performance.now() - t0) / 60_000;
  // The first minute is start-up of the churn (the first sandboxes, caches): fitted from after it.
  const fit = fitSlope(samples.filter((x) => x.t >= 1 / 60));
  // Each window of 6 samples' minimum: the RSS a GC leaves, less noisy than the raw samples.
  const lows: Array<{ t: number; mib: number }> = [];
  for (let k = 0; k + 6 <= samples.length; k += 6) {
    const w = samples.slice(k, k + 6);
    lows.push(w.reduce((a, b) => (b.mib < a.mib ? b : a)));
  }
  const lowFit = fitSlope(lows.filter((x) => x.t >= 1 / 60));
  const first = samples[0]?.mib ?? 0;
  const last = samples.at(-1)?.mib ?? 0;
  console.log(
    `churn: ${minutes.toFixed(1)} min, ${cycles} create/delete cycles (${LIVE} live), ${samples.length} RSS samples: first ${first.toFixed(0)} MiB, last ${last.toFixed(0)} MiB, max ${Math.max(...samples.map((x) => x.mib)).toFixed(0)} MiB`,
  );
  console.log(
    `  slope (least squares, after the first minute): ${fit.slope.toFixed(1)} MiB/h (${(((fit.slope * (minutes / 60)) / Math.max(1, cycles)) * 100).toFixed(2)} MiB per 100 cycles); of the window minima: ${lowFit.slope.toFixed(1)} MiB/h; load ${loadNow()}`,
  );
  // Flat: an hour at this slope adds under 5 % of the RSS (GC noise on a few samples is larger).
  const flat = lowFit.slope <= 0.05 * median(samples.map((x) => x.mib));
  figure({
    id: 'rss-churn',
    name: `operator program RSS slope over ${minutes.toFixed(0)} min of create/delete churn (${cycles} cycles)`,
    unit: 'MiB/h',
    n: samples.length,
    median: lowFit.slope,
    target: {
      text: 'flat: an hour at the slope of the RSS low points adds < 5 % of the RSS',
      met: flat,
      ...(flat ? {} : { why: `${lowFit.slope.toFixed(1)} MiB/h` }),
    },
    note: `raw samples' slope ${fit.slope.toFixed(1)} MiB/h; RSS ${first.toFixed(0)} -> ${last.toFixed(0)} MiB`,
  });
}

main()
  .catch((e) => {
    console.error(`scale bench failed: ${(e as Error).stack ?? e}`);
    if (run.ops.length) console.error(`operator logs kept in ${run.keptLogs()}`);
    process.exitCode = 1;
  })
  .finally(() => run.cleanup());
