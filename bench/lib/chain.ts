// The e2e bench's chain side: a client of the devnet as the user (submit jobs, wait for results,
// delete), the chain's own floor (a side service of the cloud blueprint that no operator program
// serves: submitJob mined -> the bench, as its operator, posts a result -> mined), and the
// operator programs' RSS read from /proc.
import { readFileSync } from 'node:fs';
import { DevnetJobs } from '@agent-sandbox/blueprint-lib/testing';
import { iTangleAbi, localTangleAbi } from '@agent-sandbox/contracts';
import type { StartedDevnet } from '@agent-sandbox/devnet';
import {
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  type LocalAccount,
  type PublicClient,
  parseEventLogs,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { encodeDeleteInput, JOB_SANDBOX_CREATE, JOB_SANDBOX_DELETE } from '../../client/index.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Chain {
  readonly pub: PublicClient;
  /** The service the jobs go to: the devnet's cloud service unless told (e.g. a one-operator one). */
  readonly service: bigint;
  constructor(
    readonly info: StartedDevnet['info'],
    readonly user: LocalAccount,
    service?: bigint,
  ) {
    this.pub = createPublicClient({ transport: http(info.rpcUrl) });
    this.service = service ?? BigInt(info.services.cloud);
  }
  wallet(a: LocalAccount) {
    return createWalletClient({ account: a, transport: http(this.info.rpcUrl) });
  }
  callData(job: number, inputs: Hex): Hex {
    return encodeFunctionData({
      abi: localTangleAbi,
      functionName: 'submitJob',
      args: [this.service, job, inputs],
    });
  }
  async gasFor(data: Hex): Promise<bigint> {
    // The estimate as the limit: a create's gas does not depend on the operator it is assigned to.
    return this.pub.estimateGas({ account: this.user, to: this.info.contracts.tangle, data });
  }
  callIdOf(logs: Parameters<typeof parseEventLogs>[0]['logs']): bigint {
    const [ev] = parseEventLogs({ abi: localTangleAbi, eventName: 'JobSubmitted', logs });
    if (!ev) throw new Error('no JobSubmitted in receipt');
    return ev.args.callId;
  }
  /** Sends one job and returns the call id and the moment its receipt was seen (10 ms polling). */
  async submit(job: number, inputs: Hex): Promise<{ callId: bigint; minedAt: number; block: bigint }> {
    const data = this.callData(job, inputs);
    const hash = await this.wallet(this.user).sendTransaction({
      to: this.info.contracts.tangle,
      data,
      gas: await this.gasFor(data),
      chain: null,
    });
    const r = await this.pub.waitForTransactionReceipt({ hash, pollingInterval: 10 });
    const minedAt = performance.now();
    if (r.status !== 'success') throw new Error(`submitJob(${job}) reverted: ${hash}`);
    return { callId: this.callIdOf(r.logs), minedAt, block: r.blockNumber };
  }
  /** Results (callId -> {output, seenAt}) for the given calls, polled every 20 ms. */
  async results(
    callIds: bigint[],
    fromBlock: bigint,
    timeoutMs = 180_000,
  ): Promise<Map<bigint, { output: Hex; seenAt: number }>> {
    const want = new Set(callIds);
    const got = new Map<bigint, { output: Hex; seenAt: number }>();
    const deadline = Date.now() + timeoutMs;
    while (got.size < want.size) {
      if (Date.now() > deadline) throw new Error(`only ${got.size}/${want.size} results in ${timeoutMs} ms`);
      const logs = await this.pub.getContractEvents({
        address: this.info.contracts.tangle,
        abi: iTangleAbi,
        eventName: 'JobResultSubmitted',
        args: { serviceId: this.service },
        fromBlock,
        toBlock: 'latest',
      });
      const now = performance.now();
      for (const l of logs) {
        const id = l.args.callId!;
        if (want.has(id) && !got.has(id)) got.set(id, { output: l.args.output!, seenAt: now });
      }
      if (got.size < want.size) await sleep(20);
    }
    return got;
  }
  /**
   * Sends one job per input, all mined in ONE block (automine off, explicit nonces, then one
   * evm_mine); returns the calls, their block and the moment the block was mined (performance.now()).
   */
  async submitInOneBlock(
    job: number,
    inputs: Hex[],
  ): Promise<{ callIds: bigint[]; block: bigint; minedAt: number; blocks: number }> {
    const data = inputs.map((x) => this.callData(job, x));
    // One estimate (of the first input) for all, with half again on top: each tx of the block
    // runs on the state the ones before it left, and what that costs is reported below.
    const estimate = await this.gasFor(data[0]!);
    const gas = (estimate * 3n) / 2n;
    const nonce = await this.pub.getTransactionCount({ address: this.user.address, blockTag: 'pending' });
    const hashes: Hex[] = [];
    await this.rpc('evm_setAutomine', [false]);
    try {
      for (const [i, d] of data.entries()) {
        hashes.push(
          await this.wallet(this.user).sendTransaction({
            to: this.info.contracts.tangle,
            data: d,
            gas,
            nonce: nonce + i,
            chain: null,
          }),
        );
      }
      await this.rpc('evm_mine');
    } finally {
      await this.rpc('evm_setAutomine', [true]);
    }
    const minedAt = performance.now();
    const receipts = await Promise.all(
      hashes.map((hash) => this.pub.waitForTransactionReceipt({ hash, pollingInterval: 10 })),
    );
    const used = receipts.map((r) => r.gasUsed).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    console.log(
      `[chain] ${inputs.length} submitJob in one block: gas used min ${used[0]} median ${used[used.length >> 1]} max ${used.at(-1)} (estimate of the first ${estimate}, limit ${gas}); over the estimate: ${used.filter((u) => u > estimate).length}`,
    );
    const failed = receipts.filter((r) => r.status !== 'success').length;
    if (failed) {
      // What the next run needs to tell out-of-gas from a contract refusal (scale's 90 of 100).
      const bad = receipts.find((r) => r.status !== 'success')!;
      throw new Error(
        `${failed} of ${inputs.length} submitJob txs in one block reverted (first: ${bad.transactionHash}, gas used ${bad.gasUsed} of the limit ${gas})`,
      );
    }
    return {
      callIds: receipts.map((r) => this.callIdOf(r.logs)),
      block: receipts[0]!.blockNumber,
      minedAt,
      blocks: new Set(receipts.map((r) => r.blockNumber)).size,
    };
  }
  async deleteAll(ids: string[]): Promise<void> {
    const start = await this.pub.getBlockNumber();
    const calls: bigint[] = [];
    for (const id of ids) calls.push((await this.submit(JOB_SANDBOX_DELETE, encodeDeleteInput(id))).callId);
    await this.results(calls, start);
  }
  async rpc(method: string, params: unknown[] = []): Promise<unknown> {
    return this.pub.request({ method: method as never, params: params as never });
  }
}

/** VmRSS (MiB) of the operator program: the launcher's node child (or the launcher itself). */
export function operatorRssMiB(pid: number): number {
  const rss = (p: number) => {
    try {
      const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      return m ? Number(m[1]) / 1024 : 0;
    } catch {
      return 0;
    }
  };
  let kids: number[] = [];
  try {
    kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number);
  } catch {}
  return Math.max(rss(pid), ...kids.map(rss));
}

/** A service of the cloud blueprint served by operator1 alone, with no operator program: the chain floor's. */
export function sideService(chain: Chain): Promise<bigint> {
  return new DevnetJobs(chain.info).newService('cloud', '0x', {
    operators: ['operator1'],
    permitted: [chain.user.address],
  });
}

/** The chain's floor: submitJob mined -> the bench, as the operator, posts a result -> mined. */
export async function chainFloorOnce(chain: Chain, service: bigint, inputs: Hex): Promise<number> {
  const data = encodeFunctionData({
    abi: localTangleAbi,
    functionName: 'submitJob',
    args: [service, JOB_SANDBOX_CREATE, inputs],
  });
  const hash = await chain.wallet(chain.user).sendTransaction({
    to: chain.info.contracts.tangle,
    data,
    gas: await chain.pub.estimateGas({ account: chain.user, to: chain.info.contracts.tangle, data }),
    chain: null,
  });
  const r = await chain.pub.waitForTransactionReceipt({ hash, pollingInterval: 10 });
  const t0 = performance.now();
  const callId = chain.callIdOf(r.logs);
  const op = privateKeyToAccount(chain.info.accounts.operator1.privateKey);
  const out = await chain.wallet(op).writeContract({
    address: chain.info.contracts.tangle,
    abi: iTangleAbi,
    functionName: 'submitResult',
    args: [service, callId, '0x'],
    chain: null,
  });
  const rr = await chain.pub.waitForTransactionReceipt({ hash: out, pollingInterval: 10 });
  if (rr.status !== 'success') throw new Error(`the floor's submitResult reverted (${out})`);
  return performance.now() - t0;
}
