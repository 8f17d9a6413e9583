// A hostile or lagging RPC in front of a real anvil (a JSON-RPC proxy that rewrites answers): logs
// from another contract are refused, and blocks the logs node did not have are never marked scanned.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { encodeAbiParameters, type Hex, numberToHex, pad, toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { router } from './job-router.ts';
import { loadKeystore } from './keystore.ts';
import { createRunner } from './runner.ts';
import { JOB_SUBMITTED_TOPIC } from './tangle-events.ts';
import { maybeDevnet } from './testing/maybe-devnet.ts';
import { rpcProxy } from './testing/rpc-proxy.ts';
import { resultsByCall, submitJobs, type ToyChain, toyChain, writeDevKey } from './testing/toy-chain.ts';

let chain: ToyChain;
beforeAll(async () => {
  chain = await toyChain(maybeDevnet());
});
afterAll(async () => chain?.stop());

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

async function runnerBehind(url: string, operator: 0 | 1, seen: Hex[], lines: string[]) {
  const dir = await mkdtemp(join(tmpdir(), 'sdk-hostile-'));
  return createRunner({
    router: router().route(0, (input) => {
      seen.push(input);
      return input;
    }),
    key: await loadKeystore({
      uri: await writeDevKey(join(dir, 'ks'), chain.operators[operator]),
      testMode: true,
    }),
    httpRpcUrl: url,
    tangle: chain.tangle,
    serviceId: chain.serviceId,
    dataDir: join(dir, 'data'),
    pollIntervalMs: 50,
    logger: pino({ level: 'info' }, { write: (l: string) => lines.push(l) }),
  });
}

describe('hostile RPC', () => {
  it('refuses JobSubmitted logs that another contract emitted (an RPC ignoring the address filter)', async () => {
    const proxy = await rpcProxy(chain.rpcUrl);
    const forged = toHex('forged by another contract');
    const other = '0x000000000000000000000000000000000000dEaD';
    // Every eth_getLogs answer gains a well-formed JobSubmitted for this service from another address.
    proxy.rewrite = async (r, forward) => {
      const a = await forward(r);
      if (r.method !== 'eth_getLogs' || !Array.isArray(a.result)) return a;
      const f = (r.params?.[0] ?? {}) as { toBlock: Hex };
      const log = {
        address: other,
        topics: [
          JOB_SUBMITTED_TOPIC,
          pad(numberToHex(chain.serviceId), { size: 32 }),
          pad('0x77777', { size: 32 }),
        ],
        data: encodeAbiParameters(
          [{ type: 'uint8' }, { type: 'address' }, { type: 'bytes' }],
          [0, chain.caller.address, forged],
        ),
        blockNumber: f.toBlock,
        blockHash: pad('0x01', { size: 32 }),
        logIndex: '0x0',
        transactionHash: pad('0x02', { size: 32 }),
        transactionIndex: '0x0',
        removed: false,
      };
      return { result: [...(a.result as unknown[]), log] };
    };
    const seen: Hex[] = [];
    const lines: string[] = [];
    const runner = await runnerBehind(proxy.url, 0, seen, lines);
    await runner.start();
    try {
      const [id] = await submitJobs(chain, 0, [toHex('genuine')]);
      await waitAnswered([id!], 20_000);
      expect(seen).toContain(toHex('genuine'));
      expect(seen).not.toContain(forged);
      expect(lines.some((l) => l.includes('another contract'))).toBe(true);
    } finally {
      await runner.stop();
      await proxy.close();
    }
  });

  it('never marks scanned the blocks a lagging logs node did not have (a create submitted there is still served)', async () => {
    const proxy = await rpcProxy(chain.rpcUrl);
    // The logs node is `best`; eth_blockNumber comes from a node ahead of it (a load balancer, or a
    // WebSocket node ahead of the HTTP one). eth_getLogs clamps toBlock to `best` without an error.
    let best: bigint | undefined = await chain.client.getBlockNumber({ cacheTime: 0 });
    let askedUpTo = 0n;
    proxy.rewrite = async (r, forward) => {
      const lag = best;
      if (lag === undefined) return forward(r);
      if (r.method === 'eth_getLogs') {
        const f = { ...(r.params?.[0] as { fromBlock: Hex; toBlock: Hex }) };
        if (BigInt(f.toBlock) > askedUpTo) askedUpTo = BigInt(f.toBlock);
        if (BigInt(f.toBlock) > lag) f.toBlock = numberToHex(lag);
        if (BigInt(f.fromBlock) > lag) return { result: [] };
        return forward({ ...r, params: [f] });
      }
      if (r.method === 'eth_getBlockByNumber') {
        const tag = r.params?.[0] as string;
        if (tag === 'latest' || tag === 'pending' || tag === 'safe' || tag === 'finalized')
          return forward({ ...r, params: [numberToHex(lag), r.params?.[1] ?? false] });
        if (BigInt(tag) > askedUpTo) askedUpTo = BigInt(tag);
        if (BigInt(tag) > lag) return { result: null };
      }
      return forward(r);
    };
    const seen: Hex[] = [];
    const lines: string[] = [];
    const runner = await runnerBehind(proxy.url, 1, seen, lines);
    await runner.start();
    try {
      const [a] = await submitJobs(chain, 0, [toHex('while lagging')]);
      const blockA = (await chain.client.getBlockNumber({ cacheTime: 0 })) as bigint;
      // The producer knows of a's block (asked for its logs, or for the block itself).
      const t0 = Date.now();
      while (askedUpTo < blockA) {
        if (Date.now() - t0 > 20_000) throw new Error('the producer never asked for the new block');
        await new Promise((res) => setTimeout(res, 20));
      }
      best = undefined; // the logs node catches up
      const [b] = await submitJobs(chain, 0, [toHex('after catching up')]);
      await waitAnswered([a!, b!], 20_000);
      expect(seen).toContain(toHex('while lagging'));
    } finally {
      await runner.stop();
      await proxy.close();
    }
  });
});
