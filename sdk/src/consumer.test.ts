// Recovery of result transactions signed and persisted by a run that then died (before or after
// broadcasting them): the next run re-sends the same bytes and never handles those calls again.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
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

  // Issue 29: the data dir fills up while a result is being sent. The signed tx cannot be made
  // durable, so it is not broadcast yet; the consumer retries the write (it used to give the call
  // up until a restart) and sends the result once space returns — exactly one.
  it.skipIf(process.getuid?.() !== 0)(
    'a result whose cursor write meets a full disk is sent once space returns',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'sdk-consumer-full-'));
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]);
      try {
        const start = await chain.client.getBlockNumber({ cacheTime: 0 });
        const [id] = await submitJobs(chain, 0, ['0x07']);
        const head = await chain.client.getBlockNumber({ cacheTime: 0 });
        const { events } = await fetchJobSubmitted(chain.client, chain.tangle, chain.serviceId, start, head);
        const e = events.find((x) => x.callId === id)!;
        const pos = { block: e.blockNumber, logIndex: e.logIndex };
        const cursor = await JobCursor.open(
          join(dir, 'data'),
          { chainId: chain.chainId, tangle: chain.tangle, serviceId: chain.serviceId },
          async () => start,
        );
        const key = await loadKeystore({
          uri: await writeDevKey(join(dir, 'ks'), chain.operators[1]),
          testMode: true,
        });
        let sawFull: () => void = () => {};
        const full = new Promise<void>((res) => {
          sawFull = res;
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
        const filler = join(dir, 'filler');
        try {
          writeFileSync(filler, Buffer.alloc(2_000_000));
        } catch {
          // ENOSPC: the filler took what there was.
        }
        const outcome = consumer.submit({ callId: id!, pos }, '0x0700');
        // The old consumer gave the call up here ('aborted': no result until a restart).
        expect(await Promise.race([full.then(() => 'retrying'), outcome])).toBe('retrying');
        expect((await resultsByCall(chain)).get(id!)).toBeUndefined(); // not broadcast before it is durable
        rmSync(filler);
        expect(await outcome).toBe('submitted');
        expect((await resultsByCall(chain)).get(id!)).toEqual([{ operator: key.address, output: '0x0700' }]);
        expect(cursor.pendingTxs).toEqual([]);
        await consumer.stop();
      } finally {
        execFileSync('umount', [dir]);
      }
    },
  );
});
