// Reorgs on a private anvil (evm_snapshot → job → result mined → evm_revert → anvil_mine): the
// runner rescans from the fork, serves the new chain's jobs (one reusing a vanished call's id gets
// its own answer), resyncs its nonce, re-sends a result whose tx vanished, undoes the work of
// calls that no longer exist, and serves every ordinary job after.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { type Hex, toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { router } from './job-router.ts';
import { loadKeystore } from './keystore.ts';
import { type BlueprintRunner, createRunner } from './runner.ts';
import type { VanishedCall } from './runner-options.ts';
import { rpcProxy } from './testing/rpc-proxy.ts';
import { resultsByCall, submitJobs, type ToyChain, toyChain, writeDevKey } from './testing/toy-chain.ts';

let chain: ToyChain;
beforeAll(async () => {
  chain = await toyChain(); // its own anvil: these tests rewind the chain
});
afterAll(async () => chain?.stop());

const rpc = (method: string, params: unknown[] = []) =>
  chain.client.request({ method: method as never, params: params as never }) as Promise<unknown>;

async function until(what: string, ok: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!(await ok())) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function answeredWith(id: bigint, output: Hex): Promise<void> {
  await until(`call ${id} answered with ${output}`, async () => {
    const r = (await resultsByCall(chain)).get(id);
    return r !== undefined && r.some((x) => x.output === output);
  });
  expect((await resultsByCall(chain)).get(id)?.length).toBe(1);
}

interface Rig {
  runner: BlueprintRunner;
  vanished: VanishedCall[];
  lines: string[];
  /** Inputs whose handler waits until release(input). */
  hold: Map<Hex, () => void>;
  started: Hex[];
  /** Inputs whose handler has returned. */
  returned: Hex[];
}

/** A runner of operator `op`, reading the chain at `rpcUrl` (default: the anvil itself). */
async function rig(op: 0 | 1, rpcUrl = chain.rpcUrl): Promise<Rig> {
  const dir = await mkdtemp(join(tmpdir(), 'sdk-reorg-'));
  const r: Rig = { vanished: [], lines: [], hold: new Map(), started: [], returned: [] } as unknown as Rig;
  onTestFailed(() => console.log(`runner log:\n${r.lines.map((l) => l.slice(0, 500)).join('')}`));
  r.runner = createRunner({
    router: router().route(0, async (input) => {
      r.started.push(input);
      if (input.endsWith('ee')) await new Promise<void>((go) => r.hold.set(input, go));
      r.returned.push(input);
      return input;
    }),
    key: await loadKeystore({ uri: await writeDevKey(join(dir, 'ks'), chain.operators[op]), testMode: true }),
    httpRpcUrl: rpcUrl,
    tangle: chain.tangle,
    serviceId: chain.serviceId,
    dataDir: join(dir, 'data'),
    pollIntervalMs: 50,
    stuckAfterMs: 500,
    onCallVanished: async (v) => {
      r.vanished.push(v);
    },
    logger: pino({ level: 'info' }, { write: (l: string) => r.lines.push(l) }),
  });
  await r.runner.start();
  return r;
}

/** Rewinds the chain to `snap` and mines `n` empty blocks (a new fork at least as long). */
async function reorgTo(snap: unknown, n: number): Promise<void> {
  await rpc('evm_revert', [snap]);
  await rpc('anvil_mine', [toHex(n)]);
}

const reorgSeen = (r: Rig) => () => r.runner.chainStatus.lastReorg !== undefined;

describe('reorg', () => {
  it('a served create is reorged out: its work is undone, the reused call id gets its own answer, later jobs follow', async () => {
    const r = await rig(0);
    try {
      const snap = await rpc('evm_snapshot');
      const [a] = await submitJobs(chain, 0, ['0xa1']);
      await answeredWith(a!, '0xa1');
      await reorgTo(snap, 3);
      await until('the runner saw the reorg', reorgSeen(r));
      const [b] = await submitJobs(chain, 0, ['0xb2']);
      expect(b).toBe(a); // the new chain reuses the id
      await answeredWith(b!, '0xb2');
      expect(r.vanished.map((v) => v.callId)).toEqual([a]);
      const later = await submitJobs(chain, 0, ['0xc3', '0xc4']);
      await answeredWith(later[0]!, '0xc3');
      await answeredWith(later[1]!, '0xc4');
      const done = r.runner.chainStatus.lastReorg!;
      expect(done).toMatchObject({ vanished: [`${a}`], recovering: false });
      expect(BigInt(done.scannedTo)).toBeGreaterThanOrEqual(BigInt(done.oldHead)); // the rescan's progress
    } finally {
      await r.runner.stop();
    }
  });

  it('an in-flight create is reorged out: no result for it, its output is handed back to undo, later jobs follow', async () => {
    // The runner's reads wait while the reorg is being sorted out until the handler has returned
    // (and every microtask after it ran): the worst order, where the handler ends mid-reorg.
    const proxy = await rpcProxy(chain.rpcUrl);
    const r = await rig(1, proxy.url);
    proxy.rewrite = async (req, forward) => {
      if (r.runner.chainStatus.lastReorg && !r.returned.includes('0xd1ee')) {
        await until('the held handler returned', () => r.returned.includes('0xd1ee'));
        await new Promise((go) => setImmediate(go));
      }
      return forward(req);
    };
    try {
      const snap = await rpc('evm_snapshot');
      const [a] = await submitJobs(chain, 0, ['0xd1ee']);
      await until('the handler started', () => r.hold.has('0xd1ee'));
      await reorgTo(snap, 3);
      await until('the runner saw the reorg', reorgSeen(r));
      r.hold.get('0xd1ee')!();
      await until('its work was handed back', () => r.vanished.some((v) => v.callId === a));
      expect(r.vanished.find((v) => v.callId === a)?.output).toBe('0xd1ee');
      const [b, c] = await submitJobs(chain, 0, ['0xd2', '0xd3']);
      expect(b).toBe(a);
      await answeredWith(b!, '0xd2');
      await answeredWith(c!, '0xd3');
    } finally {
      await r.runner.stop();
      await proxy.close();
    }
  });

  it('a reorg landing between the fork check and the read of the next block is still seen', async () => {
    const proxy = await rpcProxy(chain.rpcUrl);
    const r = await rig(0, proxy.url);
    try {
      const snap = await rpc('evm_snapshot');
      const [a] = await submitJobs(chain, 0, ['0xf1']);
      await answeredWith(a!, '0xf1');
      const top = await chain.client.getBlockNumber({ cacheTime: 0 });
      await until(
        'the runner scanned the result block',
        () => (r.runner.cursor?.recentBlocks[0]?.block ?? 0n) >= top,
      );
      // The chain reorganises when the runner asks for the block after the ones it scanned (its
      // fork check just passed): that block then comes from the new chain.
      let fired = false;
      proxy.rewrite = async (req, forward) => {
        const n = req.params?.[0];
        if (
          !fired &&
          req.method === 'eth_getBlockByNumber' &&
          typeof n === 'string' &&
          n.startsWith('0x') &&
          BigInt(n) > top
        ) {
          fired = true;
          await forward({ method: 'evm_revert', params: [snap] });
          await forward({ method: 'anvil_mine', params: ['0x4'] });
        }
        return forward(req);
      };
      await rpc('anvil_mine', ['0x1']);
      await until('the runner saw the reorg', reorgSeen(r));
      expect(fired).toBe(true);
      await until('its work was undone', () => r.vanished.some((v) => v.callId === a));
      const [b] = await submitJobs(chain, 0, ['0xf2']);
      expect(b).toBe(a);
      await answeredWith(b!, '0xf2');
    } finally {
      await r.runner.stop();
      await proxy.close();
    }
  });

  it('a reorg that removes only the result tx: the result is sent again, and the nonce gap does not hold later results', async () => {
    const r = await rig(0);
    try {
      await rpc('evm_setAutomine', [false]);
      const pending = submitJobs(chain, 0, ['0xe1']);
      await until('the job is in the pool', async () => {
        const c = (await rpc('txpool_content')) as { pending: Record<string, unknown> };
        return Object.keys(c.pending).length > 0;
      });
      await rpc('anvil_mine', ['0x1']);
      const [a] = await pending;
      const snap = await rpc('evm_snapshot');
      await until('the result is in the pool', async () => {
        const c = (await rpc('txpool_content')) as { pending: Record<string, unknown> };
        return Object.keys(c.pending).length > 0;
      });
      await rpc('anvil_mine', ['0x1']);
      const resultBlock = await chain.client.getBlockNumber({ cacheTime: 0 });
      expect((await resultsByCall(chain)).get(a!)?.length).toBe(1);
      await until(
        'the runner scanned the result block',
        () => (r.runner.cursor?.recentBlocks[0]?.block ?? 0n) >= resultBlock,
      );
      await rpc('evm_revert', [snap]); // the job's block stays, the result's goes
      await rpc('anvil_dropAllTransactions'); // and its tx is not re-mined from the pool
      await rpc('evm_setAutomine', [true]);
      await rpc('anvil_mine', ['0x3']);
      await answeredWith(a!, '0xe1');
      expect(r.vanished).toEqual([]);
      const [b] = await submitJobs(chain, 0, ['0xe2']);
      await answeredWith(b!, '0xe2');
      expect(r.runner.chainStatus.lastReorg?.resent).toEqual([`${a}`]);
    } finally {
      await rpc('evm_setAutomine', [true]);
      await r.runner.stop();
    }
  });
});
