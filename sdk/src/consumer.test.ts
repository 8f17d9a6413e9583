// Recovery of result transactions signed and persisted by a run that then died (before or after
// broadcasting them): the next run re-sends the same bytes and never handles those calls again.
import { readdirSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { iTangleAbi } from '@agent-sandbox/contracts';
import pino from 'pino';
import { encodeFunctionData, getAbiItem, type Hex, keccak256, toFunctionSelector } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResultConsumer } from './consumer.ts';
import { JobCursor } from './job-cursor.ts';
import { router } from './job-router.ts';
import { loadKeystore } from './keystore.ts';
import { createRunner } from './runner.ts';
import { fetchJobSubmitted } from './tangle-events.ts';
import { maybeDevnet } from './testing/maybe-devnet.ts';
import { mountSmallFs } from './testing/small-fs.ts';
import { resultsByCall, submitJobs, type ToyChain, toyChain, writeDevKey } from './testing/toy-chain.ts';

let chain: ToyChain;
beforeAll(async () => {
  chain = await toyChain(maybeDevnet());
});
afterAll(async () => chain?.stop());

async function signResult(callId: bigint, output: Hex, nonce: number): Promise<Hex> {
  const account = privateKeyToAccount(chain.operators[0].privateKey);
  const fees = await chain.client.estimateFeesPerGas();
  return account.signTransaction({
    type: 'eip1559',
    chainId: chain.chainId,
    to: chain.tangle,
    data: encodeFunctionData({
      abi: iTangleAbi,
      functionName: 'submitResult',
      args: [chain.serviceId, callId, output],
    }),
    nonce,
    gas: 3_000_000n,
    ...fees,
  });
}

describe('result consumer recovery', () => {
  it('re-sends a persisted-but-unsent result tx and a mined one, and does not run their handlers', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-consumer-'));
    const dataDir = join(dir, 'data');
    const start = await chain.client.getBlockNumber();
    const [unsent, mined, fresh] = await submitJobs(chain, 0, ['0x01', '0x02', '0x03']);
    const head = await chain.client.getBlockNumber({ cacheTime: 0 });
    const { events } = await fetchJobSubmitted(chain.client, chain.tangle, chain.serviceId, start, head);
    const pos = (id: bigint) => {
      const e = events.find((x) => x.callId === id)!;
      return { block: e.blockNumber, logIndex: e.logIndex };
    };
    // What a dying run left behind: a cursor at the start, two signed txs; only the second was broadcast.
    const cursor = await JobCursor.open(
      dataDir,
      { chainId: chain.chainId, tangle: chain.tangle, serviceId: chain.serviceId },
      async () => start,
    );
    const nonce = await chain.client.getTransactionCount({
      address: chain.operators[0].address,
      blockTag: 'pending',
    });
    const rawA = await signResult(unsent!, '0xaa', nonce);
    const rawB = await signResult(mined!, '0xbb', nonce + 1);
    await cursor.addPending({
      hash: keccak256(rawA),
      raw: rawA,
      nonce,
      calls: [{ callId: unsent!, pos: pos(unsent!) }],
    });
    await cursor.addPending({
      hash: keccak256(rawB),
      raw: rawB,
      nonce: nonce + 1,
      calls: [{ callId: mined!, pos: pos(mined!) }],
    });
    // B is sent; it waits in the mempool for A's nonce (anvil queues it), as after a crash mid-send.
    await chain.client.sendRawTransaction({ serializedTransaction: rawB });

    const handled: bigint[] = [];
    const runner = createRunner({
      router: router().route(0, (input, ctx) => {
        handled.push(ctx.callId);
        return input;
      }),
      key: await loadKeystore({
        uri: await writeDevKey(join(dir, 'ks'), chain.operators[0]),
        testMode: true,
      }),
      httpRpcUrl: chain.rpcUrl,
      tangle: chain.tangle,
      serviceId: chain.serviceId,
      dataDir,
      pollIntervalMs: 100,
      logger: pino({ level: 'silent' }),
    });
    await runner.start();
    try {
      const t0 = Date.now();
      for (;;) {
        const r = await resultsByCall(chain);
        if ([unsent, mined, fresh].every((id) => r.has(id!))) break;
        if (Date.now() - t0 > 60_000) throw new Error('results missing');
        await new Promise((res) => setTimeout(res, 100));
      }
    } finally {
      await runner.stop();
    }
    const r = await resultsByCall(chain);
    expect(r.get(unsent!)).toEqual([{ operator: chain.operators[0].address, output: '0xaa' }]);
    expect(r.get(mined!)).toEqual([{ operator: chain.operators[0].address, output: '0xbb' }]);
    expect(r.get(fresh!)).toEqual([{ operator: chain.operators[0].address, output: '0x03' }]);
    expect(handled).toEqual([fresh]);
    expect(runner.cursor!.pendingTxs).toEqual([]);
  });

  it('sends results that are ready together as one submitResults transaction', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-consumer-'));
    const start = await chain.client.getBlockNumber({ cacheTime: 0 });
    const ids = await submitJobs(chain, 0, ['0x01', '0x02', '0x03']);
    const head = await chain.client.getBlockNumber({ cacheTime: 0 });
    const { events } = await fetchJobSubmitted(chain.client, chain.tangle, chain.serviceId, start, head);
    const cursor = await JobCursor.open(
      dir,
      { chainId: chain.chainId, tangle: chain.tangle, serviceId: chain.serviceId },
      async () => start,
    );
    const key = await loadKeystore({
      uri: await writeDevKey(join(dir, 'ks'), chain.operators[1]),
      testMode: true,
    });
    const consumer = new ResultConsumer({
      client: chain.client,
      account: key.account,
      chainId: chain.chainId,
      tangle: chain.tangle,
      serviceId: chain.serviceId,
      cursor,
      log: pino({ level: 'silent' }),
    });
    const outcomes = await Promise.all(
      ids.map((id) => {
        const e = events.find((x) => x.callId === id)!;
        cursor.begin(id, { block: e.blockNumber, logIndex: e.logIndex });
        return consumer.submit(
          { callId: id, pos: { block: e.blockNumber, logIndex: e.logIndex } },
          '0xc0ffee',
        );
      }),
    );
    expect(outcomes).toEqual(['submitted', 'submitted', 'submitted']);
    const logs = await chain.client.getLogs({
      address: chain.tangle,
      event: getAbiItem({ abi: iTangleAbi, name: 'JobResultSubmitted' }),
      args: { serviceId: chain.serviceId, operator: key.address },
      fromBlock: start,
    });
    const mine = logs.filter((l) => ids.includes(l.args.callId!));
    expect(mine).toHaveLength(3);
    expect(new Set(mine.map((l) => l.transactionHash)).size).toBe(1);
    const tx = await chain.client.getTransaction({ hash: mine[0]!.transactionHash });
    expect(tx.input.slice(0, 10)).toBe(toFunctionSelector('submitResults(uint64,uint64[],bytes[])'));
    expect(cursor.inFlightCount).toBe(0);
    await consumer.stop();
  });

  // Issue 29: the data dir fills up while a result is being sent (a real small ext4 on a loop
  // device). The cursor keeps a reserve (two slots whose blocks it holds): the signed tx is made
  // durable there and sent at once — the user gets the result while the disk is full, exactly one,
  // and a restart still knows it. (The old consumer waited, retrying, until space returned.)
  const asRoot = it.skipIf(process.getuid?.() !== 0);

  async function fullDiskRig(name: string) {
    const fs = mountSmallFs(`sdk-consumer-${name}`, 8);
    const start = await chain.client.getBlockNumber({ cacheTime: 0 });
    const [id] = await submitJobs(chain, 0, ['0x07']);
    const head = await chain.client.getBlockNumber({ cacheTime: 0 });
    const { events } = await fetchJobSubmitted(chain.client, chain.tangle, chain.serviceId, start, head);
    const e = events.find((x) => x.callId === id)!;
    const pos = { block: e.blockNumber, logIndex: e.logIndex };
    const dataDir = join(fs.dir, 'data');
    const ident = { chainId: chain.chainId, tangle: chain.tangle, serviceId: chain.serviceId };
    const cursor = await JobCursor.open(dataDir, ident, async () => start);
    const key = await loadKeystore({
      uri: await writeDevKey(join(fs.dir, 'ks'), chain.operators[1]),
      testMode: true,
    });
    let sawFull: () => void = () => {};
    const full = new Promise<'retrying'>((res) => {
      sawFull = () => res('retrying');
    });
    const log = pino(
      { level: 'warn' },
      {
        write: (line: string) => {
          if (line.includes('cannot write the job cursor')) sawFull();
        },
      },
    );
    const consumer = new ResultConsumer({
      client: chain.client,
      account: key.account,
      chainId: chain.chainId,
      tangle: chain.tangle,
      serviceId: chain.serviceId,
      cursor,
      log,
    });
    cursor.begin(id!, pos);
    await cursor.persist();
    const reopen = () => JobCursor.open(dataDir, ident, async () => 0n);
    return { fs, id: id!, pos, cursor, key, full, consumer, reopen };
  }

  asRoot(
    'a result whose cursor meets a full disk is made durable in the reserve and sent at once',
    async () => {
      const r = await fullDiskRig('reserve');
      try {
        r.fs.fill();
        const outcome = r.consumer.submit({ callId: r.id, pos: r.pos }, '0x0701');
        // The old consumer retried here until space returned (no result while the disk was full).
        expect(await Promise.race([r.full, outcome])).toBe('submitted');
        expect((await resultsByCall(chain)).get(r.id)).toEqual([
          { operator: r.key.address, output: '0x0701' },
        ]);
        expect(r.cursor.reserved).toBe(true);
        // A restart while the disk is still full knows the call is answered: nothing to redo, no tx pending.
        const during = await r.reopen();
        expect(during.isFinished(r.id, r.pos)).toBe(true);
        expect(during.pendingTxs).toEqual([]);
        // Space returns: the next write goes to the file again, and a reopen reads the same state.
        r.fs.unfill();
        await r.cursor.persist();
        expect(r.cursor.reserved).toBe(false);
        const after = await r.reopen();
        expect(after.isFinished(r.id, r.pos)).toBe(true);
        expect(after.position).toEqual(during.position);
        await r.consumer.stop();
      } finally {
        r.fs.destroy();
      }
    },
  );

  asRoot(
    'without a reserve (its files gone), the result is sent once space returns, exactly once',
    async () => {
      const r = await fullDiskRig('noreserve');
      try {
        for (const f of readdirSync(join(r.fs.dir, 'data')))
          if (f.includes('.reserve-')) rmSync(join(r.fs.dir, 'data', f));
        r.fs.fill();
        const outcome = r.consumer.submit({ callId: r.id, pos: r.pos }, '0x0700');
        expect(await Promise.race([r.full, outcome])).toBe('retrying');
        expect((await resultsByCall(chain)).get(r.id)).toBeUndefined(); // not broadcast before it is durable
        r.fs.unfill();
        expect(await outcome).toBe('submitted');
        expect((await resultsByCall(chain)).get(r.id)).toEqual([
          { operator: r.key.address, output: '0x0700' },
        ]);
        expect(r.cursor.pendingTxs).toEqual([]);
        await r.consumer.stop();
      } finally {
        r.fs.destroy();
      }
    },
  );
});
