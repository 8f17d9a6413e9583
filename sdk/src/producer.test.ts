// The producer on a real anvil with its connection cut (a TCP proxy): jobs submitted while the WebSocket
// is down are backfilled once it reconnects; an HTTP outage is retried with backoff and caught up.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { router } from './job-router.ts';
import { loadKeystore } from './keystore.ts';
import { createRunner } from './runner.ts';
import { maybeDevnet } from './testing/maybe-devnet.ts';
import { rpcProxy } from './testing/rpc-proxy.ts';
import { tcpProxy } from './testing/tcp-proxy.ts';
import { resultsByCall, submitJobs, type ToyChain, toyChain, writeDevKey } from './testing/toy-chain.ts';

let chain: ToyChain;
beforeAll(async () => {
  chain = await toyChain(maybeDevnet());
});
afterAll(async () => chain?.stop());

async function waitAnswered(ids: bigint[], ms: number): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const r = await resultsByCall(chain);
    if (ids.every((id) => r.has(id))) return Date.now() - t0;
    if (Date.now() - t0 > ms)
      throw new Error(`calls ${ids.filter((id) => !r.has(id)).join(',')} unanswered after ${ms} ms`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

describe('producer under connection loss', () => {
  it('backfills the jobs submitted while the socket was down, right after it reconnects', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-ws-'));
    const proxy = await tcpProxy(Number(new URL(chain.rpcUrl).port));
    const lines: string[] = [];
    const runner = createRunner({
      router: router().route(0, (input) => input),
      key: await loadKeystore({
        uri: await writeDevKey(join(dir, 'ks'), chain.operators[0]),
        testMode: true,
      }),
      httpRpcUrl: chain.rpcUrl,
      wsRpcUrl: `ws://127.0.0.1:${proxy.port}`,
      tangle: chain.tangle,
      serviceId: chain.serviceId,
      dataDir: join(dir, 'data'),
      // The safety scan comes every 4 x 1 h: whatever answers within this test is the WebSocket
      // path (the reconnect's backfill), however slow a busy machine makes each answer.
      pollIntervalMs: 3_600_000,
      logger: pino({ level: 'info' }, { write: (l: string) => lines.push(l) }),
    });
    await runner.start();
    try {
      const [a] = await submitJobs(chain, 0, ['0x0a']);
      await waitAnswered([a!], 120_000);

      await proxy.cut();
      await new Promise((r) => setTimeout(r, 200));
      const during = await submitJobs(chain, 0, [toHex('b1'), toHex('b2'), toHex('b3')]);
      await new Promise((r) => setTimeout(r, 300));
      await proxy.resume();
      // No job is submitted after the reconnect: only the reconnect's backfill can answer these.
      await waitAnswered(during, 120_000);
      expect(lines.some((l) => l.includes('websocket head subscription failed'))).toBe(true);
      const r = await resultsByCall(chain);
      for (const id of [a!, ...during]) expect(r.get(id)?.length).toBe(1);
    } finally {
      await runner.stop();
      await proxy.close();
    }
  }, 300_000);

  it('survives an HTTP RPC outage with logged backoff and catches up afterwards', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-http-'));
    const proxy = await tcpProxy(Number(new URL(chain.rpcUrl).port));
    const lines: string[] = [];
    const runner = createRunner({
      router: router().route(0, (input) => input),
      key: await loadKeystore({
        uri: await writeDevKey(join(dir, 'ks'), chain.operators[1]),
        testMode: true,
      }),
      httpRpcUrl: `http://127.0.0.1:${proxy.port}`,
      tangle: chain.tangle,
      serviceId: chain.serviceId,
      dataDir: join(dir, 'data'),
      pollIntervalMs: 100,
      logger: pino({ level: 'info' }, { write: (l: string) => lines.push(l) }),
    });
    await runner.start();
    try {
      await proxy.cut();
      const during = await submitJobs(chain, 0, [toHex('c1'), toHex('c2')]);
      const t0 = Date.now();
      while (!lines.some((l) => l.includes('job producer RPC error; retrying'))) {
        if (Date.now() - t0 > 20_000) throw new Error('no RPC error was logged during the outage');
        await new Promise((r) => setTimeout(r, 100));
      }
      // /health reads this: since when the chain is unreachable.
      const since = runner.chainStatus.unreachableSince;
      expect(since).toBeGreaterThanOrEqual(t0 - 1000);
      await proxy.resume();
      await waitAnswered(during, 40_000);
      const r = await resultsByCall(chain);
      for (const id of during) expect(r.get(id)?.length).toBe(1);
      expect(runner.chainStatus.unreachableSince).toBeUndefined();
    } finally {
      await runner.stop();
      await proxy.close();
    }
  });

  it('stops at once when stopped in the middle of a scan, however long its poll period', async () => {
    // The scan's eth_getLogs is held until stop() has aborted the producer; then the producer must
    // not go on to wait a whole poll period (here an hour) before it notices it was stopped.
    const proxy = await rpcProxy(chain.rpcUrl);
    let held: (() => void) | undefined;
    const inScan = new Promise<void>((inside) => {
      proxy.rewrite = async (r, forward) => {
        if (r.method === 'eth_getLogs' && !held) {
          await new Promise<void>((go) => {
            held = go;
            inside();
          });
        }
        return forward(r);
      };
    });
    const dir = await mkdtemp(join(tmpdir(), 'sdk-stop-'));
    const lines: string[] = [];
    const runner = createRunner({
      router: router().route(0, (input) => input),
      key: await loadKeystore({
        uri: await writeDevKey(join(dir, 'ks'), chain.operators[1]),
        testMode: true,
      }),
      httpRpcUrl: proxy.url,
      tangle: chain.tangle,
      serviceId: chain.serviceId,
      dataDir: join(dir, 'data'),
      pollIntervalMs: 3_600_000,
      logger: pino({ level: 'info' }, { write: (l: string) => lines.push(l) }),
    });
    try {
      await runner.start();
      await inScan;
      let stopped = false;
      const stopping = runner.stop().then(() => {
        stopped = true;
      });
      held!(); // the scan finishes after the abort
      const t0 = Date.now();
      while (!stopped && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 50));
      expect(stopped, 'runner.stop() still waiting for the producer').toBe(true);
      await stopping;
      expect(lines.some((l) => l.includes('job producer stopped'))).toBe(true);
    } finally {
      held?.();
      if (runner.state !== 'stopped') runner.stop();
      await proxy.close();
    }
  });
});
