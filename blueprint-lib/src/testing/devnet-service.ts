// Test helper: a fresh cloud service on the shared devnet (both operators, a fresh permitted
// caller), so a test's jobs never mix with another test's; plus job submission and results.
import { localTangleAbi } from '@agent-sandbox/contracts';
import type { DevnetInfo } from '@agent-sandbox/devnet';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  type Hex,
  http,
  type LocalAccount,
  type PublicClient,
  parseEther,
  parseEventLogs,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { BlueprintChain } from '../chain.ts';

const isNonceClash = (e: unknown) =>
  /nonce|replacement|already known/i.test(String((e as Error)?.message ?? e));

export class DevnetJobs {
  readonly pub: PublicClient;
  readonly info: DevnetInfo;
  readonly caller: LocalAccount;
  serviceId = 0n;

  constructor(info: DevnetInfo) {
    this.info = info;
    this.pub = createPublicClient({ transport: http(info.rpcUrl) });
    this.caller = privateKeyToAccount(generatePrivateKey());
  }

  account(role: keyof DevnetInfo['accounts']): LocalAccount {
    return privateKeyToAccount(this.info.accounts[role].privateKey);
  }

  /** Sends a Tangle call, retrying when another process used the same key at the same moment. */
  async send(
    from: LocalAccount,
    functionName: string,
    args: readonly unknown[],
  ): Promise<{ logs: readonly unknown[]; blockNumber: bigint; transactionHash: Hex }> {
    const wallet = createWalletClient({ account: from, transport: http(this.info.rpcUrl) });
    for (let i = 0; ; i++) {
      try {
        const { request } = await this.pub.simulateContract({
          account: from,
          address: this.info.contracts.tangle,
          abi: localTangleAbi,
          functionName: functionName as never,
          args: args as never,
        });
        // The node's estimate as the limit, no margin: the blueprint's gas does not depend on
        // which operator a create is assigned to.
        const hash = await wallet.writeContract({ ...(request as object), chain: null } as never);
        const r = await this.pub.waitForTransactionReceipt({ hash, pollingInterval: 100 });
        if (r.status !== 'success') throw new Error(`${functionName} reverted (${hash})`);
        return { logs: r.logs, blockNumber: r.blockNumber, transactionHash: hash };
      } catch (e) {
        if (i < 8 && isNonceClash(e)) {
          await new Promise((res) => setTimeout(res, 150 + Math.random() * 300));
          continue;
        }
        throw e;
      }
    }
  }

  /** New cloud service with operator1 and operator2; `caller` (fresh, funded) may submit jobs. */
  newCloudService(): Promise<bigint> {
    return this.newService('cloud', '0x');
  }

  /**
   * New service of one of the devnet's blueprints; `config` is the request's config bytes. By
   * default both operators serve it and `caller` (fresh, funded) is its permitted caller; `o`
   * narrows the operators (each approves; the last approval activates) or names other callers,
   * which are funded unless they are devnet accounts.
   */
  async newService(
    kind: 'cloud' | 'instance' | 'teeInstance',
    config: Hex,
    o: { operators?: ReadonlyArray<'operator1' | 'operator2'>; permitted?: readonly Address[] } = {},
  ): Promise<bigint> {
    const roles = o.operators ?? (['operator1', 'operator2'] as const);
    const permitted = o.permitted ?? [this.caller.address];
    const known = new Set(Object.values(this.info.accounts).map((a) => a.address.toLowerCase()));
    for (const addr of new Set([this.caller.address, ...permitted])) {
      if (known.has(addr.toLowerCase())) continue;
      await this.pub.request({
        method: 'anvil_setBalance' as never,
        params: [addr, `0x${parseEther('100').toString(16)}`] as never,
      });
    }
    const ops = roles.map((r) => this.info.accounts[r].address);
    const req = await this.send(this.account('serviceOwner'), 'requestService', [
      BigInt(this.info.blueprints[kind]),
      ops,
      config,
      permitted,
      0n,
      '0x0000000000000000000000000000000000000000',
      0n,
      0,
    ]);
    const [ev] = parseEventLogs({
      abi: localTangleAbi,
      eventName: 'ServiceRequested',
      logs: req.logs as never,
    });
    const requestId = ev!.args.requestId;
    const approval = {
      requestId,
      securityCommitments: [],
      blsPubkey: [0n, 0n, 0n, 0n],
      blsPopSignature: [0n, 0n],
      teeCommitments: [],
    };
    let done = req;
    for (const r of roles) done = await this.send(this.account(r), 'approveService', [approval]);
    const [act] = parseEventLogs({
      abi: localTangleAbi,
      eventName: 'ServiceActivated',
      logs: done.logs as never,
    });
    this.serviceId = act!.args.serviceId;
    return this.serviceId;
  }

  /** A second, funded account the service owner permits to call jobs on this service. */
  async addCaller(): Promise<LocalAccount> {
    const other = privateKeyToAccount(generatePrivateKey());
    await this.pub.request({
      method: 'anvil_setBalance' as never,
      params: [other.address, `0x${parseEther('100').toString(16)}`] as never,
    });
    await this.send(this.account('serviceOwner'), 'addPermittedCaller', [this.serviceId, other.address]);
    return other;
  }

  /** Submits a job from `caller` (or `as`); returns the call and the operator the blueprint named. */
  async submit(
    jobIndex: number,
    inputs: Hex,
    as: LocalAccount = this.caller,
  ): Promise<{ callId: bigint; blockNumber: bigint; transactionHash: Hex; operator: Address | undefined }> {
    const r = await this.send(as, 'submitJob', [this.serviceId, jobIndex, inputs]);
    const [ev] = parseEventLogs({ abi: localTangleAbi, eventName: 'JobSubmitted', logs: r.logs as never });
    const callId = ev!.args.callId;
    const chain = new BlueprintChain({ httpRpcUrl: this.info.rpcUrl, blueprint: this.info.contracts.cloud });
    const ref = {
      serviceId: this.serviceId,
      callId,
      blockNumber: r.blockNumber,
      transactionHash: r.transactionHash,
    };
    const operator =
      (await chain.operatorForCall('OperatorAssigned', ref)) ??
      (await chain.operatorForCall('OperatorRouted', ref));
    return { callId, blockNumber: r.blockNumber, transactionHash: r.transactionHash, operator };
  }

  /** The call id and assigned operator of a mined create (from its receipt's logs). */
  async submitted(receipt: { logs: readonly unknown[]; blockNumber: bigint; transactionHash: Hex }) {
    const [ev] = parseEventLogs({
      abi: localTangleAbi,
      eventName: 'JobSubmitted',
      logs: receipt.logs as never,
    });
    const chain = new BlueprintChain({ httpRpcUrl: this.info.rpcUrl, blueprint: this.info.contracts.cloud });
    const callId = ev!.args.callId;
    const operator = await chain.operatorForCall('OperatorAssigned', {
      serviceId: this.serviceId,
      callId,
      blockNumber: receipt.blockNumber,
      transactionHash: receipt.transactionHash,
    });
    if (!operator) throw new Error(`call ${callId} has no OperatorAssigned`);
    return { callId, operator };
  }

  /** Posts a result as one of the devnet operators (what the consumer does). */
  async submitResult(as: Address, callId: bigint, output: Hex): Promise<void> {
    const role = [this.info.accounts.operator1, this.info.accounts.operator2].find(
      (a) => a.address.toLowerCase() === as.toLowerCase(),
    );
    if (!role) throw new Error(`${as} is not a devnet operator`);
    await this.send(privateKeyToAccount(role.privateKey), 'submitResult', [this.serviceId, callId, output]);
  }

  otherOperator(op: Address): Address {
    const { operator1, operator2 } = this.info.accounts;
    return op.toLowerCase() === operator1.address.toLowerCase() ? operator2.address : operator1.address;
  }
}
