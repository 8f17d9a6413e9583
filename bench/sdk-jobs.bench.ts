// Benchmark: the SDK's job path on a real anvil (instant mining). For each producer mode, ≥200 jobs
// with a no-op handler, submitted one by one at random gaps; measures
//   pickup  = JobSubmitted mined (submitter's eth_sendRawTransaction returned) → handler start,
//   e2e     = same start → the result's receipt seen by the consumer (job on chain → result on chain).
// The floor, measured in the same run, is the Rust SDK's behaviour reproduced with this runner:
// eth_getLogs every 2 s in windows of 10 blocks, one result per transaction, one job at a time.
// Prints median / p99 per mode and the floor/mode ratio of medians (higher = faster than the floor).
// Run: npx tsx bench/sdk-jobs.bench.ts [--jobs 200] [--gap-ms 40] [--only WebSocket]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { localTangleAbi } from '@agent-sandbox/contracts';
import { createRunner, loadKeystore, type RunnerOptions, router } from '@agent-sandbox/sdk';
import pino from 'pino';
import { createWalletClient, defineChain, encodeFunctionData, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { toyChain, writeDevKey } from '../sdk/src/testing/toy-chain.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const JOBS = arg('jobs', 200);
const GAP_MS = arg('gap-ms', 40);

interface Mode {
  name: string;
  opts: Partial<RunnerOptions>;
  ws?: boolean;
}

const modes: Mode[] = [
  {
    name: 'floor: Rust-SDK-like (poll 2 s, 10-block windows, serial)',
    opts: { pollIntervalMs: 2000, windowBlocks: 10, concurrency: 1, maxBatch: 1 },
  },
  { name: 'polling, default (1 s)', opts: {} },
  { name: 'polling, 250 ms', opts: { pollIntervalMs: 250 } },
  { name: 'WebSocket new heads', opts: {}, ws: true },
];

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const fmt = (ms: number) => `${ms.toFixed(1).padStart(8)} ms`;

async function runMode(mode: Mode) {
  const chain = await toyChain();
  const dir = await mkdtemp(join(tmpdir(), 'sdk-bench-'));
  const submittedAt = new Map<bigint, number>();
  const pickup: number[] = [];
  const e2e: number[] = [];
  const startedAt = new Map<bigint, number>();
  let done = 0;
  const runner = createRunner({
    router: router().route(0, () => '0x'),
    key: await loadKeystore({ uri: await writeDevKey(join(dir, 'ks'), chain.operators[0]), testMode: true }),
    httpRpcUrl: chain.rpcUrl,
    wsRpcUrl: mode.ws ? chain.wsUrl : undefined,
    tangle: chain.tangle,
    serviceId: chain.serviceId,
    dataDir: join(dir, 'data'),
    logger: pino({ level: process.env['LOG_LEVEL'] ?? 'error' }),
    onJobStart: (e) => startedAt.set(e.callId, performance.now()),
    onJobDone: (e, outcome) => {
      const t = performance.now();
      const t0 = submittedAt.get(e.callId);
      const ts = startedAt.get(e.callId);
      if (outcome === 'submitted' && t0 !== undefined && ts !== undefined) {
        pickup.push(ts - t0);
        e2e.push(t - t0);
      }
      done++;
    },
    ...mode.opts,
  });
  await runner.start();

  // Submit with precomputed nonces and gas: one RPC per job, returning once anvil has mined it.
  const account = privateKeyToAccount(chain.caller.privateKey);
  const wallet = createWalletClient({
    account,
    chain: defineChain({
      id: chain.chainId,
      name: 'anvil',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [chain.rpcUrl] } },
    }),
    transport: http(chain.rpcUrl),
  });
  const fees = await chain.client.estimateFeesPerGas();
  let nonce = await chain.client.getTransactionCount({ address: account.address, blockTag: 'pending' });
  for (let i = 0; i < JOBS; i++) {
    const callId = BigInt(i); // call ids count per service from 0; this service is fresh
    const raw = await account.signTransaction({
      type: 'eip1559',
      chainId: chain.chainId,
      to: chain.tangle,
      data: encodeFunctionData({
        abi: localTangleAbi,
        functionName: 'submitJob',
        args: [chain.serviceId, 0, '0x'],
      }),
      nonce: nonce++,
      gas: 400_000n,
      maxFeePerGas: fees.maxFeePerGas * 2n,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    });
    await wallet.sendRawTransaction({ serializedTransaction: raw });
    submittedAt.set(callId, performance.now());
    await new Promise((r) => setTimeout(r, Math.random() * 2 * GAP_MS));
  }
  const t0 = Date.now();
  while (done < JOBS && Date.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 50));
  await runner.stop();
  await chain.stop();
  await rm(dir, { recursive: true, force: true });
  if (pickup.length < JOBS) throw new Error(`${mode.name}: only ${pickup.length}/${JOBS} jobs answered`);
  return { name: mode.name, pickup, e2e };
}

const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
const results = [];
for (const m of modes.filter((x, i) => i === 0 || !only || x.name.includes(only))) {
  process.stderr.write(`[bench] ${m.name} ...\n`);
  results.push(await runMode(m));
}
const floor = results[0]!;
console.log(
  `\nSDK job path, ${JOBS} jobs per mode, no-op handler, random gaps 0–${2 * GAP_MS} ms (anvil, instant mining)\n`,
);
console.log(
  `${'mode'.padEnd(58)} ${'pickup p50'.padStart(11)} ${'pickup p99'.padStart(11)} ${'e2e p50'.padStart(11)} ${'e2e p99'.padStart(11)}  floor/mode (p50 e2e)`,
);
for (const r of results) {
  const ratio = pct(floor.e2e, 50) / pct(r.e2e, 50);
  console.log(
    `${r.name.padEnd(58)} ${fmt(pct(r.pickup, 50))} ${fmt(pct(r.pickup, 99))} ${fmt(pct(r.e2e, 50))} ${fmt(pct(r.e2e, 99))}  ${ratio.toFixed(1)}x`,
  );
}
