// SandboxChain: the owner's side of jobs 0/1 on Tangle with viem — submit from the owner's
// account, find the call id and the assigned operator in the receipt, and wait for the
// operator's posted result. ABIs come only from forge's output ('@agent-sandbox/contracts').
import { agentSandboxBlueprintAbi, describeRevert, iTangleAbi } from '@agent-sandbox/contracts';
import {
  type Address,
  BaseError,
  createPublicClient,
  createWalletClient,
  getAbiItem,
  type Hex,
  http,
  type LocalAccount,
  type Log,
  type PublicClient,
  parseEventLogs,
  toEventSelector,
} from 'viem';
import { ClientError } from './errors.ts';
import {
  type CreateOutput,
  decodeCreateOutput,
  decodeDeleteOutput,
  encodeCreateInput,
  encodeDeleteInput,
  JOB_SANDBOX_CREATE,
  JOB_SANDBOX_DELETE,
  type SandboxCreateRequest,
} from './job-io.ts';
import { sleep } from './sleep.ts';

export interface SandboxChainOptions {
  rpcUrl: string;
  /** The Tangle core contract (proxy) address. */
  tangle: Address;
  serviceId: bigint;
  /** The sandbox owner's key; needed to submit jobs, not to read. */
  account?: LocalAccount;
  /** Poll interval for logs, ms. Default 1000. */
  pollMs?: number;
}

export interface SubmittedJob {
  callId: bigint;
  txHash: Hex;
  blockNumber: bigint;
  /** The operator the blueprint assigned (job 0) or routed to (job 1), from the same receipt. */
  operator: Address | undefined;
  /** The contract that named it (the blueprint, called by Tangle in that transaction). */
  blueprint: Address | undefined;
}

export interface JobResult {
  operator: Address;
  output: Hex;
  txHash: Hex;
  blockNumber: bigint;
}

/** Whose result counts: the operator the blueprint chose, and the blueprint (for CallSettled). */
export interface ChosenOperator {
  operator: Address;
  blueprint?: Address | undefined;
}

export interface WaitOptions {
  /** First block to search; pass the submit receipt's block. Default: 0. */
  fromBlock?: bigint;
  /** Take the result from this operator only (another operator's result is not trusted). */
  chosen?: ChosenOperator | undefined;
  /** Default 10 minutes (a cold image build can take a while). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

const jobSubmittedTopic = toEventSelector(getAbiItem({ abi: iTangleAbi, name: 'JobSubmitted' }));

/** Errors from both contracts, so a revert inside the blueprint's onJobCall decodes by name. */
const revertAbi = [...iTangleAbi, ...agentSandboxBlueprintAbi.filter((i) => i.type === 'error')];

/**
 * A viem failure as a CHAIN ClientError naming the revert, without dumping request internals. A
 * refusal by the blueprint's manager arrives from Tangle wrapped in ManagerReverted; the shared
 * decoder (contracts' describeRevert) names the manager's own error.
 */
export function chainError(e: unknown, what: string): ClientError {
  if (e instanceof ClientError) return e;
  if (e instanceof BaseError) {
    const revert = describeRevert(e);
    if (revert) {
      const name = revert === 'no-data' ? 'reverted without a reason' : revert.errorName;
      const text = revert === 'no-data' ? name : revert.text;
      return new ClientError('CHAIN', `${what} reverted: ${text}`, {
        cause: e,
        details: {
          revert: name,
          ...(revert !== 'no-data' && revert.manager ? { manager: revert.manager } : {}),
        },
      });
    }
    return new ClientError('CHAIN', `${what} failed: ${e.shortMessage}`, { cause: e });
  }
  return new ClientError('CHAIN', `${what} failed: ${(e as Error)?.message ?? String(e)}`, { cause: e });
}

export class SandboxChain {
  readonly tangle: Address;
  readonly serviceId: bigint;
  readonly publicClient: PublicClient;
  private readonly account: LocalAccount | undefined;
  private readonly rpcUrl: string;
  private readonly pollMs: number;

  constructor(options: SandboxChainOptions) {
    this.tangle = options.tangle;
    this.serviceId = options.serviceId;
    this.account = options.account;
    this.rpcUrl = options.rpcUrl;
    this.pollMs = options.pollMs ?? 1000;
    this.publicClient = createPublicClient({ transport: http(options.rpcUrl) });
  }

  /** Job 0 from the owner's account, inputs flat-encoded. */
  submitCreate(request: SandboxCreateRequest, options: { value?: bigint } = {}): Promise<SubmittedJob> {
    return this.submitJob(JOB_SANDBOX_CREATE, encodeCreateInput(request), options);
  }

  /** Job 1 from the owner's account (the blueprint reverts for anyone else). */
  submitDelete(sandboxId: string, options: { value?: bigint } = {}): Promise<SubmittedJob> {
    return this.submitJob(JOB_SANDBOX_DELETE, encodeDeleteInput(sandboxId), options);
  }

  async submitJob(jobIndex: number, inputs: Hex, options: { value?: bigint } = {}): Promise<SubmittedJob> {
    const account = this.account;
    if (!account)
      throw new ClientError('USAGE', 'submitting a job needs the owner’s key (--private-key or --keystore)');
    const what = `submitJob(service ${this.serviceId}, job ${jobIndex})`;
    const wallet = createWalletClient({ account, transport: http(this.rpcUrl) });
    let txHash: Hex | undefined;
    // Another process sending from the same account can take our nonce between the node's
    // answer and our send; that is retried (a fresh nonce each time), nothing else is.
    for (let attempt = 1; txHash === undefined; attempt++) {
      try {
        // Simulate first: a revert (no capacity, not permitted, unknown sandbox) surfaces by
        // name and costs nothing.
        const { request } = await this.publicClient.simulateContract({
          account,
          address: this.tangle,
          abi: revertAbi,
          functionName: 'submitJob',
          args: [this.serviceId, jobIndex, inputs],
          ...(options.value === undefined ? {} : { value: options.value }),
        });
        // viem's default gas: the node's estimate, no margin. The blueprint's gas does not depend
        // on which operator its random pick lands on, so the estimate holds in any block.
        txHash = await wallet.writeContract({ ...request, chain: null });
      } catch (e) {
        const nonceRace =
          /nonce too low|nonce has already been used|replacement transaction underpriced|already known/i;
        if (attempt < 4 && e instanceof BaseError && nonceRace.test(`${e.shortMessage} ${e.details}`))
          continue;
        throw chainError(e, what);
      }
    }
    let receipt: Awaited<ReturnType<PublicClient['waitForTransactionReceipt']>>;
    try {
      receipt = await this.publicClient.waitForTransactionReceipt({ hash: txHash });
    } catch (e) {
      throw chainError(e, `waiting for ${txHash}`);
    }
    if (receipt.status !== 'success') {
      throw new ClientError('CHAIN', `${what} transaction ${txHash} reverted`, { details: { txHash } });
    }
    const callId = this.callIdFrom(receipt.logs);
    if (callId === undefined) {
      throw new ClientError(
        'CHAIN',
        `transaction ${txHash} emitted no JobSubmitted for service ${this.serviceId}`,
      );
    }
    const named = this.operatorFrom(receipt.logs, callId);
    return {
      callId,
      txHash,
      blockNumber: receipt.blockNumber,
      operator: named?.operator,
      blueprint: named?.blueprint,
    };
  }

  /**
   * The call id from JobSubmitted. Read straight from the topics: serviceId and callId are the
   * first two indexed fields in both the real layout (jobIndex in data) and the published one
   * (jobIndex as a 4th topic), so this works whichever a deployment emits.
   */
  private callIdFrom(logs: readonly Log[]): bigint | undefined {
    for (const log of logs) {
      if (log.address.toLowerCase() !== this.tangle.toLowerCase()) continue;
      const [t0, t1, t2] = log.topics;
      if (t0 !== jobSubmittedTopic || !t1 || !t2) continue;
      if (BigInt(t1) === this.serviceId) return BigInt(t2);
    }
    return undefined;
  }

  /** OperatorAssigned (create) or OperatorRouted (delete) for this call, if present in `logs`. */
  private operatorFrom(logs: Log[], callId: bigint): { operator: Address; blueprint: Address } | undefined {
    const events = parseEventLogs({
      abi: agentSandboxBlueprintAbi,
      logs,
      eventName: ['OperatorAssigned', 'OperatorRouted'],
      strict: false,
    });
    for (const ev of events) {
      const args = ev.args as { serviceId?: bigint; callId?: bigint; operator?: Address };
      if (args.serviceId === this.serviceId && args.callId === callId && args.operator) {
        return { operator: args.operator, blueprint: ev.address };
      }
    }
    return undefined;
  }

  /**
   * Which operator the blueprint assigned to a create call. Read only from the receipt of the
   * transaction that submitted the call (found by Tangle's own JobSubmitted log for this service
   * and call id): an OperatorAssigned emitted by any other contract, in any other transaction,
   * is never believed.
   */
  async assignedOperator(callId: bigint, fromBlock = 0n): Promise<Address | undefined> {
    try {
      const logs = await this.publicClient.getLogs({
        address: this.tangle,
        event: getAbiItem({ abi: iTangleAbi, name: 'JobSubmitted' }),
        args: { serviceId: this.serviceId, callId },
        fromBlock,
        toBlock: 'latest',
      });
      const txHash = logs.find((l) => this.callIdFrom([l]) === callId)?.transactionHash;
      if (!txHash) return undefined;
      const receipt = await this.publicClient.getTransactionReceipt({ hash: txHash });
      return this.operatorFrom(receipt.logs, callId)?.operator;
    } catch (e) {
      throw chainError(e, 'reading OperatorAssigned');
    }
  }

  /**
   * The `rpcAddress` an operator announced for this service's blueprint: its latest
   * OperatorRegistered or OperatorPreferencesUpdated there (Tangle never stores it), undefined
   * when it never registered or has left. Per blueprint: an operator of several blueprints may
   * serve each at another URL.
   */
  async operatorRpcAddress(operator: Address): Promise<string | undefined> {
    try {
      const blueprintId = await this.blueprintId();
      const read = (
        eventName: 'OperatorRegistered' | 'OperatorPreferencesUpdated' | 'OperatorUnregistered',
      ) =>
        this.publicClient.getContractEvents({
          address: this.tangle,
          abi: iTangleAbi,
          eventName,
          args: { blueprintId, operator },
          fromBlock: 0n,
          toBlock: 'latest',
        });
      const logs = (
        await Promise.all([
          read('OperatorRegistered'),
          read('OperatorPreferencesUpdated'),
          read('OperatorUnregistered'),
        ])
      ).flat();
      logs.sort((x, y) =>
        x.blockNumber === y.blockNumber ? x.logIndex - y.logIndex : x.blockNumber < y.blockNumber ? -1 : 1,
      );
      let url: string | undefined;
      for (const l of logs) {
        url =
          l.eventName === 'OperatorUnregistered' ? undefined : (l.args as { rpcAddress?: string }).rpcAddress;
      }
      return url;
    } catch (e) {
      throw chainError(e, "reading the operator's announced rpcAddress");
    }
  }

  #blueprintId: bigint | undefined;
  /** The service's blueprint (Tangle's getService). */
  async blueprintId(): Promise<bigint> {
    if (this.#blueprintId === undefined) {
      const s = await this.publicClient.readContract({
        address: this.tangle,
        abi: iTangleAbi,
        functionName: 'getService',
        args: [this.serviceId],
      });
      if (/^0x0{40}$/i.test(s.owner)) {
        throw new ClientError('CHAIN', `service ${this.serviceId} does not exist on ${this.tangle}`);
      }
      this.#blueprintId = s.blueprintId;
    }
    return this.#blueprintId;
  }

  /** The service's operators (Tangle's getServiceOperators). */
  async serviceOperators(): Promise<readonly Address[]> {
    try {
      return await this.publicClient.readContract({
        address: this.tangle,
        abi: iTangleAbi,
        functionName: 'getServiceOperators',
        args: [this.serviceId],
      });
    } catch (e) {
      throw chainError(e, 'reading the service operators');
    }
  }

  /** The operator holding a sandbox, per the blueprint contract; undefined for an unknown id. */
  async sandboxOperator(blueprint: Address, sandboxId: string): Promise<Address | undefined> {
    try {
      const op = await this.publicClient.readContract({
        address: blueprint,
        abi: agentSandboxBlueprintAbi,
        functionName: 'getSandboxOperator',
        args: [sandboxId],
      });
      return /^0x0{40}$/i.test(op) ? undefined : op;
    } catch (e) {
      throw chainError(e, 'reading getSandboxOperator');
    }
  }

  /** Polls for the first JobResultSubmitted of this call; a timeout or abort is an error. */
  async waitForResult(callId: bigint, options: WaitOptions = {}): Promise<JobResult> {
    const deadline = Date.now() + (options.timeoutMs ?? 600_000);
    for (;;) {
      if (options.signal?.aborted) throw new ClientError('INTERRUPTED', `stopped waiting for call ${callId}`);
      const found = await this.findResult(callId, options.fromBlock ?? 0n, options.chosen);
      if (found) return found;
      if (Date.now() >= deadline) {
        throw new ClientError(
          'TIMEOUT',
          `no result for call ${callId} on service ${this.serviceId} yet; is an operator running?`,
          {
            exitCode: 6,
            details: { callId: callId.toString() },
          },
        );
      }
      await sleep(this.pollMs, options.signal);
    }
  }

  /**
   * The posted result of a call, if any yet. With `chosen`, only that operator's: its
   * JobResultSubmitted on Tangle, or (when another operator's result completed the call first)
   * the CallSettled it recorded on the blueprint. Another operator's result is never returned.
   */
  async findResult(callId: bigint, fromBlock = 0n, chosen?: ChosenOperator): Promise<JobResult | undefined> {
    const all = await this.results(callId, fromBlock);
    if (!chosen) return all[0];
    const mine = all.find((r) => r.operator.toLowerCase() === chosen.operator.toLowerCase());
    if (mine || !chosen.blueprint || all.length === 0) return mine;
    try {
      const logs = await this.publicClient.getContractEvents({
        address: chosen.blueprint,
        abi: agentSandboxBlueprintAbi,
        eventName: 'CallSettled',
        args: { serviceId: this.serviceId, callId, operator: chosen.operator },
        fromBlock,
        toBlock: 'latest',
      });
      const log = logs[0];
      if (!log?.args.outputs || log.blockNumber === null || log.transactionHash === null) return undefined;
      return {
        operator: chosen.operator,
        output: log.args.outputs,
        txHash: log.transactionHash,
        blockNumber: log.blockNumber,
      };
    } catch (e) {
      throw chainError(e, 'reading CallSettled');
    }
  }

  /** Every JobResultSubmitted for a call, first first (Tangle takes the first as the result). */
  async results(callId: bigint, fromBlock = 0n): Promise<JobResult[]> {
    try {
      const logs = await this.publicClient.getContractEvents({
        address: this.tangle,
        abi: iTangleAbi,
        eventName: 'JobResultSubmitted',
        args: { serviceId: this.serviceId, callId },
        fromBlock,
        toBlock: 'latest',
      });
      const out: JobResult[] = [];
      for (const log of logs) {
        if (
          !log.args.operator ||
          !log.args.output ||
          log.blockNumber === null ||
          log.transactionHash === null
        )
          continue;
        out.push({
          operator: log.args.operator,
          output: log.args.output,
          txHash: log.transactionHash,
          blockNumber: log.blockNumber,
        });
      }
      return out;
    } catch (e) {
      throw chainError(e, 'reading JobResultSubmitted');
    }
  }

  /** Waits for and decodes a create result; a failed provision has an empty sandboxId. */
  async waitForCreateResult(
    callId: bigint,
    options: WaitOptions = {},
  ): Promise<CreateOutput & { operator: Address }> {
    const r = await this.waitForResult(callId, options);
    return { ...decodeCreateOutput(r.output), operator: r.operator };
  }

  async waitForDeleteResult(callId: bigint, options: WaitOptions = {}): Promise<Record<string, unknown>> {
    return decodeDeleteOutput((await this.waitForResult(callId, options)).output);
  }
}
