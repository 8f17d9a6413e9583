// The operator's own calls on the blueprint contract (from its key): record a call's outcome when
// Tangle already completed it with another operator's result, give back a create's reservation
// when it gives up, and report a sandbox stopped for good or an instance deprovisioned. Each call
// is simulated first; a named revert that means "nothing to do" is not an error.
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import type { Logger } from 'pino';
import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  type Hex,
  http,
  type LocalAccount,
  type PublicClient,
} from 'viem';
import { BlueprintError } from './errors.ts';

export type WriteOutcome = 'sent' | 'nothing-to-do';

const NONCE_CLASH =
  /nonce too low|nonce has already been used|replacement transaction underpriced|already known/i;

/** What the blueprint-side follow-ups need (BlueprintWriter implements it). */
export interface ChainWriter {
  settleCall(serviceId: bigint, callId: bigint, output: Hex): Promise<WriteOutcome>;
  releaseReservation(serviceId: bigint, callId: bigint): Promise<WriteOutcome>;
  reportSandboxGone(sandboxId: string): Promise<WriteOutcome>;
  reportDeprovisioned(serviceId: bigint): Promise<WriteOutcome>;
}

export class BlueprintWriter implements ChainWriter {
  readonly #pub: PublicClient;
  readonly #account: LocalAccount;
  readonly #blueprint: Address;
  readonly #rpc: string;
  readonly #log: Logger | undefined;
  /** One write at a time: they share the operator's nonce. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(opts: { httpRpcUrl: string; blueprint: Address; account: LocalAccount; logger?: Logger }) {
    this.#rpc = opts.httpRpcUrl;
    this.#pub = createPublicClient({ transport: http(opts.httpRpcUrl) });
    this.#account = opts.account;
    this.#blueprint = opts.blueprint;
    this.#log = opts.logger;
  }

  settleCall(serviceId: bigint, callId: bigint, output: Hex): Promise<WriteOutcome> {
    return this.#write('settleCall', [serviceId, callId, output], ['NotChosenOperator']);
  }

  releaseReservation(serviceId: bigint, callId: bigint): Promise<WriteOutcome> {
    return this.#write('releaseReservation', [serviceId, callId], ['NoReservation', 'ReservationNotExpired']);
  }

  reportSandboxGone(sandboxId: string): Promise<WriteOutcome> {
    return this.#write('reportSandboxGone', [sandboxId], ['UnknownSandbox', 'NotSandboxOwner']);
  }

  reportDeprovisioned(serviceId: bigint): Promise<WriteOutcome> {
    return this.#write('reportDeprovisioned', [serviceId], ['NotProvisioned']);
  }

  #write(functionName: string, args: readonly unknown[], benign: string[]): Promise<WriteOutcome> {
    const run = this.#queue.then(() => this.#send(functionName, args, benign));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #send(functionName: string, args: readonly unknown[], benign: string[]): Promise<WriteOutcome> {
    let request: unknown;
    try {
      ({ request } = await this.#pub.simulateContract({
        account: this.#account,
        address: this.#blueprint,
        abi: agentSandboxBlueprintAbi,
        functionName: functionName as never,
        args: args as never,
      }));
    } catch (e) {
      const name = revertName(e);
      if (name && benign.includes(name)) {
        this.#log?.debug({ functionName, reason: name }, 'blueprint call not needed');
        return 'nothing-to-do';
      }
      throw new BlueprintError(
        'CHAIN',
        `${functionName} on the blueprint would fail (${name ?? 'no reason given'}); check the RPC and the operator key`,
        { cause: e },
      );
    }
    const wallet = createWalletClient({ account: this.#account, transport: http(this.#rpc) });
    let hash: Hex | undefined;
    // The key is shared with the result sender: a nonce taken meanwhile is retried, nothing else.
    for (let attempt = 1; hash === undefined; attempt++) {
      try {
        hash = await wallet.writeContract({ ...(request as object), chain: null } as never);
      } catch (e) {
        if (attempt >= 5 || !NONCE_CLASH.test(String((e as Error)?.message ?? e))) throw e;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
    const r = await this.#pub.waitForTransactionReceipt({ hash, pollingInterval: 100 });
    if (r.status !== 'success') {
      throw new BlueprintError('CHAIN', `${functionName} transaction ${hash} reverted on chain`);
    }
    this.#log?.info({ functionName, tx: hash }, 'blueprint call sent');
    return 'sent';
  }
}

function revertName(e: unknown): string | undefined {
  if (!(e instanceof BaseError)) return undefined;
  const r = e.walk((x) => x instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
  return r?.data?.errorName;
}
