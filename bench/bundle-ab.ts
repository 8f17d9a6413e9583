// A/B of two operator bundles on chain, interleaved in one run: each bundle gets a devnet of its
// own with both operator programs (SANDBOX_WARM_POOL=2, as bench/e2e.bench.ts), and per round, in
// turn: the docker run -> /health floor, a cold create on chain with A and with B (the order flips
// every round: A B, B A, ...), then for the warm pool each devnet's chain floor (submitJob mined ->
// empty submitResult mined on a side service no program serves) next to a pool create on chain.
// So every figure of A has one of B measured seconds apart under the same load. Used for the
// result sender's round trips of issue 24; not run by `npm run bench`.
// Run: npx tsx bench/bundle-ab.ts <bundle A> <bundle B> [--rounds 8]
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  buildCreateRequest,
  decodeCreateOutput,
  encodeCreateInput,
  JOB_SANDBOX_CREATE,
} from '../client/index.ts';
import { Chain, chainFloorOnce, sideService } from './lib/chain.ts';
import { median, p99 } from './lib/figures.ts';
import { type FloorShape, floorOnce } from './lib/floor.ts';
import { BenchRun } from './lib/operators.ts';
import { loadNow } from './lib/series.ts';

const [A, B] = [process.argv[2], process.argv[3]].map((p) => (p ? resolve(p) : undefined));
if (!A || !B || !existsSync(A) || !existsSync(B))
  throw new Error('usage: npx tsx bench/bundle-ab.ts <bundle A (.mjs)> <bundle B (.mjs)> [--rounds 8]');
const i = process.argv.indexOf('--rounds');
const ROUNDS = i > 0 ? Number(process.argv[i + 1]) : 8;
const POOL = 2;
const MEMORY_MB = 256;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const input = (n: number, memoryMb: number) =>
  encodeCreateInput(buildCreateRequest({ name: `ab-${n}`, cpu_cores: 1, memory_mb: memoryMb, disk_gb: 1 }));

interface Side {
  name: string;
  bundle: string;
  run: BenchRun;
  chain: Chain;
  side: bigint;
  cold: number[];
  pool: number[];
  chainFloor: number[];
}

async function start(name: string, bundle: string, image: string): Promise<Side> {
  const run = new BenchRun(`bundle-ab-${name}`);
  const info = await run.startDevnet();
  const extra = {
    SANDBOX_WARM_POOL: `${POOL}`,
    SANDBOX_DEFAULT_CPU_CORES: '1',
    SANDBOX_DEFAULT_MEMORY_MB: `${MEMORY_MB}`,
    SANDBOX_DEFAULT_DISK_GB: '1',
  };
  await Promise.all([
    run.startOperator('operator1', image, extra, 'bundle', { bundle }),
    run.startOperator('operator2', image, extra, 'bundle', { bundle }),
  ]);
  const chain = new Chain(info, privateKeyToAccount(info.accounts.user.privateKey));
  const side = await sideService(chain);
  return { name, bundle, run, chain, side, cold: [], pool: [], chainFloor: [] };
}

async function poolsFull(s: Side): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (const op of s.run.ops) {
    for (;;) {
      const text = await (await fetch(`${op.url}/metrics`)).text();
      if (Number(/^agent_sandbox_warm_pool_ready (\S+)$/m.exec(text)?.[1] ?? 0) >= POOL) break;
      if (Date.now() > deadline) throw new Error(`${s.name} ${op.role}'s warm pool never refilled`);
      await sleep(20);
    }
  }
}

/** One create on chain -> its result mined (ms), then its delete. */
async function createOnce(s: Side, inputs: Hex): Promise<number> {
  const sub = await s.chain.submit(JOB_SANDBOX_CREATE, inputs);
  const r = (await s.chain.results([sub.callId], sub.block)).get(sub.callId)!;
  const out = decodeCreateOutput(r.output);
  if (!out.sandboxId || out.json['state'] !== 'running')
    throw new Error(`${s.name}: create failed: ${JSON.stringify(out.json).slice(0, 300)}`);
  await s.chain.deleteAll([out.sandboxId]);
  return r.seenAt - sub.minedAt;
}

const sides: Side[] = [];
async function main(): Promise<void> {
  console.log(`bundle A/B: A ${A}, B ${B}, ${ROUNDS} rounds; load at start ${loadNow()}`);
  const { tag: image } = await ensureSandboxImage({
    onProgress: (l) => process.stderr.write(`[image] ${l}\n`),
  });
  sides.push(await start('A', A!, image), await start('B', B!, image));
  const run0 = sides[0]!.run;
  const shape: FloorShape = {
    run: run0.id,
    labels: run0.labels,
    runLabel: run0.label,
    cpu: 1,
    memoryMb: MEMORY_MB,
  };
  const floor: number[] = [];
  // Warm-up of every path, not measured.
  await floorOnce(image, -1, shape);
  for (const s of sides) {
    await createOnce(s, input(-1, MEMORY_MB - 1));
    await chainFloorOnce(s.chain, s.side, input(-2, MEMORY_MB));
  }
  for (let r = 0; r < ROUNDS; r++) {
    floor.push(await floorOnce(image, r, shape));
    const order = r % 2 === 0 ? sides : [...sides].reverse();
    // Cold: 1 MB less than the pool's shape, so it never claims.
    for (const s of order) s.cold.push(await createOnce(s, input(r, MEMORY_MB - 1)));
    for (const s of order) {
      await poolsFull(s);
      s.chainFloor.push(await chainFloorOnce(s.chain, s.side, input(1000 + r, MEMORY_MB)));
      s.pool.push(await createOnce(s, input(2000 + r, MEMORY_MB)));
    }
    process.stderr.write(
      `  round ${r + 1}/${ROUNDS}: floor ${floor.at(-1)!.toFixed(0)} ms; ${sides.map((s) => `${s.name} cold ${s.cold.at(-1)!.toFixed(0)}, pool ${s.pool.at(-1)!.toFixed(0)} (chain floor ${s.chainFloor.at(-1)!.toFixed(0)})`).join('; ')}; load ${loadNow()}\n`,
    );
  }
  const f = (xs: number[]) => `median ${median(xs).toFixed(1)} ms, p99 ${p99(xs).toFixed(1)} ms`;
  console.log(`docker run -> /health floor: ${f(floor)}`);
  for (const s of sides) {
    console.log(`${s.name} (${s.bundle}):`);
    console.log(
      `  cold create on chain: ${f(s.cold)}; / floor: median ${(median(s.cold) / median(floor)).toFixed(2)}x, p99 ${(p99(s.cold) / p99(floor)).toFixed(2)}x`,
    );
    console.log(
      `  pool create on chain: ${f(s.pool)}; chain floor ${f(s.chainFloor)}; over it: median ${(median(s.pool) - median(s.chainFloor)).toFixed(1)} ms`,
    );
  }
  const pairs = (k: 'cold' | 'pool') => sides[1]![k].filter((b, n) => b < sides[0]![k][n]!).length;
  console.log(
    `B faster than A in the same round: cold ${pairs('cold')}/${ROUNDS}, pool ${pairs('pool')}/${ROUNDS}`,
  );
  console.log(`load at end ${loadNow()}`);
}

main()
  .catch((e) => {
    console.error(`bundle A/B failed: ${(e as Error).stack ?? e}`);
    for (const s of sides) if (s.run.ops.length) console.error(`${s.name} logs kept in ${s.run.keptLogs()}`);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const s of sides) await s.run.cleanup();
  });
