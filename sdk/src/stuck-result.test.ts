// A result tx that cannot be mined must not block every later result (a private anvil: automine
// off, a dropped tx whose nonce another tx of the same key takes, a base fee raised above its fee,
// and a tx never mined, given up with a logged, recorded outcome).
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localTangleAbi } from '@agent-sandbox/contracts';
import pino from 'pino';
import { createWalletClient, defineChain, type Hex, http, parseEventLogs, parseGwei, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SubmitOutcome } from './consumer.ts';
import { router } from './job-router.ts';
import { loadKeystore } from './keystore.ts';
import { createRunner, type RunnerOptions } from './runner.ts';
import {
  resultsByCall,
  type TestAccount,
  type ToyChain,
  toyChain,
  writeDevKey,
} from './testing/toy-chain.ts';

let chain: ToyChain;
beforeAll(async () => {
  chain = await toyChain(); // its own anvil: these tests stop mining and move the base fee
});
afterAll(async () => chain?.stop());

const rpc = (method: string, params: unknown[] = []) =>
  chain.client.request({ method: method as never, params: params as never });

function wallet(a: TestAccount) {
  return createWalletClient({
    account: privateKeyToAccount(a.privateKey),
    chain: defineChain({
      id: chain.chainId,
      name: 'anvil',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [chain.rpcUrl] } },
    }),
    transport: http(chain.rpcUrl),
  });
}

/** Submits one job with mining off: sends it, mines one block, returns its call id. */
async function submitUnmined(input: Hex): Promise<bigint> {
  const hash = await wallet(chain.caller).writeContract({
    address: chain.tangle,
    abi: localTangleAbi,
    functionName: 'submitJob',
    args: [chain.serviceId, 0, input],
    gas: 400_000n,
  });
  await rpc('anvil_mine', ['0x1']);
  const r = await chain.client.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  return parseEventLogs({ abi: localTangleAbi, eventName: 'JobSubmitted', logs: r.logs })[0]!.args.callId;
}

/** The operator's tx waiting in the pool (polls txpool_content until there is one). */
async function pooledTxOf(address: string): Promise<{ hash: Hex; nonce: number }> {
  const t0 = Date.now();
  for (;;) {
    const c = (await rpc('txpool_content')) as { pending: Record<string, Record<string, { hash: Hex }>> };
    const mine = Object.entries(c.pending).find(([a]) => a.toLowerCase() === address.toLowerCase());
    const first = mine && Object.entries(mine[1])[0];
    if (first) return { hash: first[1].hash, nonce: Number(first[0]) };
    if (Date.now() - t0 > 20_000) throw new Error('the operator never sent its result');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function waitAnswered(ids: bigint[], ms: number): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const r = await resultsByCall(chain);
    if (ids.every((id) => r.has(id))) return;
    if (Date.now() - t0 > ms)
      throw new Error(`calls ${ids.filter((id) => !r.has(id)).join(',')} unanswered after ${ms} ms`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

async function startRunner(op: 0 | 1, extra: Partial<RunnerOptions>, lines: string[]) {
  const dir = await mkdtemp(join(tmpdir(), 'sdk-stuck-'));
  const runner = createRunner({
    router: router().route(0, (input) => input),
    key: await loadKeystore({ uri: await writeDevKey(join(dir, 'ks'), chain.operators[op]), testMode: true }),
    httpRpcUrl: chain.rpcUrl,
    tangle: chain.tangle,
    serviceId: chain.serviceId,
    dataDir: join(dir, 'data'),
    pollIntervalMs: 50,
    stuckAfterMs: 300,
    logger: pino({ level: 'info' }, { write: (l: string) => lines.push(l) }),
    ...extra,
  });
  await runner.start();
  return runner;
}

describe('stuck result transactions', () => {
  it('re-signs a dropped result whose nonce another tx of the same key took; later results follow', async () => {
    const lines: string[] = [];
    const runner = await startRunner(0, {}, lines);
    try {
      await rpc('evm_setAutomine', [false]);
      const a = await submitUnmined(toHex('dropped'));
      const pooled = await pooledTxOf(chain.operators[0].address);
      await rpc('anvil_dropTransaction', [pooled.hash]);
      // The blueprint's own writer shares the key: its tx takes the freed nonce.
      const w = wallet(chain.operators[0]);
      await w.sendTransaction({ to: chain.operators[0].address, value: 0n, nonce: pooled.nonce });
      await rpc('anvil_mine', ['0x1']);
      await rpc('evm_setAutomine', [true]);
      await waitAnswered([a], 20_000);
      const b = await submitUnmined(toHex('later'));
      await waitAnswered([b], 20_000);
      const r = await resultsByCall(chain);
      expect(r.get(a)?.length).toBe(1);
      expect(r.get(b)?.length).toBe(1);
      expect(lines.some((l) => l.includes('took the nonce of a result tx'))).toBe(true);
    } finally {
      await rpc('evm_setAutomine', [true]);
      await runner.stop();
    }
  });

  it('replaces a result priced below a raised base fee with a higher fee at the same nonce', async () => {
    const lines: string[] = [];
    const runner = await startRunner(1, {}, lines);
    try {
      await rpc('evm_setAutomine', [false]);
      const a = await submitUnmined(toHex('underpriced'));
      const pooled = await pooledTxOf(chain.operators[1].address);
      await rpc('anvil_setNextBlockBaseFeePerGas', [toHex(parseGwei('500'))]);
      await rpc('anvil_mine', ['0x1']); // a block the result cannot enter
      await rpc('evm_setAutomine', [true]);
      await waitAnswered([a], 20_000);
      const tx = await chain.client.getTransaction({ hash: (await resultsTx(a))! });
      expect(tx.nonce).toBe(pooled.nonce);
      expect(tx.hash).not.toBe(pooled.hash);
      expect(lines.some((l) => l.includes('below-base-fee'))).toBe(true);
    } finally {
      await rpc('evm_setAutomine', [true]);
      await runner.stop();
    }
  });

  it('gives up on a result that is never mined, records the outcome, and later results are not blocked', async () => {
    const lines: string[] = [];
    const outcomes: Array<[bigint, SubmitOutcome | 'skipped']> = [];
    const runner = await startRunner(
      0,
      { maxFeeBumps: 2, onJobDone: (e, o) => outcomes.push([e.callId, o]) },
      lines,
    );
    try {
      await rpc('evm_setAutomine', [false]);
      const a = await submitUnmined(toHex('never mined'));
      const t0 = Date.now();
      while (!outcomes.some(([id]) => id === a)) {
        if (Date.now() - t0 > 30_000) throw new Error('the stuck result was never given up');
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(outcomes.find(([id]) => id === a)?.[1]).toBe('failed');
      expect(lines.some((l) => l.includes('giving up on these calls'))).toBe(true);
      await rpc('evm_setAutomine', [true]);
      const b = await submitUnmined(toHex('after giving up'));
      await waitAnswered([b], 20_000);
      const r = await resultsByCall(chain);
      expect(r.get(b)?.length).toBe(1);
      expect(r.get(a)?.length ?? 0).toBeLessThanOrEqual(1);
    } finally {
      await rpc('evm_setAutomine', [true]);
      await runner.stop();
    }
  });
});

/** The tx hash of the result of call `id`. */
async function resultsTx(id: bigint): Promise<Hex | undefined> {
  const logs = await chain.client.getLogs({
    address: chain.tangle,
    event: localTangleAbi.find((x) => x.type === 'event' && x.name === 'JobResultSubmitted') as never,
    fromBlock: 0n,
    toBlock: 'latest',
  });
  return (logs as unknown as Array<{ args: { callId: bigint }; transactionHash: Hex }>).find(
    (l) => l.args.callId === id,
  )?.transactionHash;
}
