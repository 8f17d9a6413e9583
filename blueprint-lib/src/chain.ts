// The chain facts the handlers depend on: which operator the blueprint assigned a create to
// (OperatorAssigned), which one a delete was routed to (OperatorRouted), and who holds a sandbox.
import { agentSandboxBlueprintAbi, iTangleAbi } from '@agent-sandbox/contracts';
import {
  type Address,
  createPublicClient,
  getAddress,
  type Hex,
  http,
  isAddressEqual,
  type PublicClient,
  parseEventLogs,
  zeroAddress,
} from 'viem';
import { BlueprintError } from './errors.ts';

export interface CallRef {
  serviceId: bigint;
  callId: bigint;
  /** Block of the JobSubmitted log: OperatorAssigned/Routed are emitted in the same transaction. */
  blockNumber: bigint;
  transactionHash?: Hex | undefined;
}

/** What the handlers read from chain; `BlueprintChain` is the viem implementation. */
export interface ChainReader {
  /** The operator the blueprint named for this call, or undefined when it emitted none. */
  operatorForCall(event: 'OperatorAssigned' | 'OperatorRouted', call: CallRef): Promise<Address | undefined>;
  /** Whether the create's reserved slot was released (expired, given up, service ended). */
  reservationReleased(call: CallRef): Promise<boolean>;
  /** The operator holding a sandbox per the blueprint (undefined: the blueprint does not know it). */
  sandboxOperator(sandboxId: string): Promise<Address | undefined>;
  /** A stored workflow as the blueprint keeps it, per service (undefined: unknown id). */
  workflow(serviceId: bigint, workflowId: bigint): Promise<ChainWorkflow | undefined>;
  /** The service's owner as the blueprint recorded it (undefined: not known). */
  serviceOwner(serviceId: bigint): Promise<Address | undefined>;
}

export interface ChainWorkflow {
  name: string;
  workflow_json: string;
  target_kind: number;
  target_sandbox_id: string;
  service_id: bigint;
  active: boolean;
  owner: Address;
}

export interface BlueprintChainOptions {
  httpRpcUrl: string;
  /** The blueprint's service-manager contract (the BSM that emits OperatorAssigned). */
  blueprint: Address;
  attempts?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The service manager's address for a blueprint, from Tangle's getBlueprint (tnt-core 0.19's
 * static Blueprint struct; an unknown id answers a zero manager). BLUEPRINT_CONTRACT overrides it.
 */
export async function resolveBlueprintContract(opts: {
  httpRpcUrl: string;
  tangle: Address;
  blueprintId: bigint;
}): Promise<Address> {
  const client = createPublicClient({ transport: http(opts.httpRpcUrl) });
  try {
    const { manager } = await client.readContract({
      address: opts.tangle,
      abi: iTangleAbi,
      functionName: 'getBlueprint',
      args: [opts.blueprintId],
    });
    if (isAddressEqual(manager, zeroAddress)) {
      throw new Error('no such blueprint, or it has no service manager');
    }
    return getAddress(manager);
  } catch (e) {
    throw new BlueprintError(
      'CHAIN',
      `cannot read blueprint ${opts.blueprintId}'s service manager from ${opts.tangle} (${(e as Error).message.split('\n')[0]}); set BLUEPRINT_CONTRACT to its address`,
      { cause: e },
    );
  }
}

export class BlueprintChain implements ChainReader {
  readonly client: PublicClient;
  readonly blueprint: Address;
  readonly #attempts: number;

  constructor(opts: BlueprintChainOptions) {
    this.client = createPublicClient({ transport: http(opts.httpRpcUrl) });
    this.blueprint = getAddress(opts.blueprint);
    this.#attempts = opts.attempts ?? 5;
  }

  /** Retries transient RPC failures; a handler must not lose a job to one dropped request. */
  async #retry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    let last: unknown;
    for (let i = 0; i < this.#attempts; i++) {
      try {
        return await fn();
      } catch (e) {
        last = e;
        await sleep(Math.min(4000, 200 * 2 ** i));
      }
    }
    throw new BlueprintError(
      'CHAIN',
      `${what} failed after ${this.#attempts} attempts: ${String((last as Error)?.message ?? last).split('\n')[0]}`,
      {
        cause: last,
      },
    );
  }

  async operatorForCall(
    event: 'OperatorAssigned' | 'OperatorRouted',
    call: CallRef,
  ): Promise<Address | undefined> {
    // Only logs emitted by the blueprint contract count: another contract in the same transaction
    // could emit a look-alike event, so the address filter is the trust anchor.
    const logs = await this.#retry(`reading ${event} for call ${call.callId}`, () =>
      call.transactionHash
        ? this.client.getTransactionReceipt({ hash: call.transactionHash }).then((r) => r.logs)
        : this.client.getLogs({
            address: this.blueprint,
            fromBlock: call.blockNumber,
            toBlock: call.blockNumber,
          }),
    );
    const ours = logs.filter((l) => isAddressEqual(l.address, this.blueprint));
    const events = parseEventLogs({
      abi: agentSandboxBlueprintAbi,
      eventName: event,
      logs: ours,
      strict: true,
    });
    for (const ev of events) {
      const a = ev.args as { serviceId: bigint; callId: bigint; operator: Address };
      if (a.serviceId === call.serviceId && a.callId === call.callId) return getAddress(a.operator);
    }
    return undefined;
  }

  async reservationReleased(call: CallRef): Promise<boolean> {
    const logs = await this.#retry(`reading ReservationReleased for call ${call.callId}`, () =>
      this.client.getContractEvents({
        address: this.blueprint,
        abi: agentSandboxBlueprintAbi,
        eventName: 'ReservationReleased',
        args: { serviceId: call.serviceId, callId: call.callId },
        fromBlock: call.blockNumber,
        toBlock: 'latest',
      }),
    );
    return logs.length > 0;
  }

  async sandboxOperator(sandboxId: string): Promise<Address | undefined> {
    const op = await this.#retry(`reading the operator of sandbox ${sandboxId}`, () =>
      this.client.readContract({
        address: this.blueprint,
        abi: agentSandboxBlueprintAbi,
        functionName: 'getSandboxOperator',
        args: [sandboxId],
      }),
    );
    return isAddressEqual(op, zeroAddress) ? undefined : getAddress(op);
  }

  async workflow(serviceId: bigint, workflowId: bigint): Promise<ChainWorkflow | undefined> {
    const w = await this.#retry(`reading workflow ${workflowId}`, () =>
      this.client.readContract({
        address: this.blueprint,
        abi: agentSandboxBlueprintAbi,
        functionName: 'getWorkflow',
        args: [serviceId, workflowId],
      }),
    );
    // An unknown id reads as the zero struct (empty name: the contract requires a name).
    return w.name === '' ? undefined : w;
  }

  /** Whether Tangle still counts the service active (false once terminated or expired). */
  isServiceActive(tangle: Address, serviceId: bigint): Promise<boolean> {
    return this.#retry(`reading whether service ${serviceId} is active`, () =>
      this.client.readContract({
        address: tangle,
        abi: iTangleAbi,
        functionName: 'isServiceActive',
        args: [serviceId],
      }),
    );
  }

  async serviceOwner(serviceId: bigint): Promise<Address | undefined> {
    const o = await this.#retry(`reading the owner of service ${serviceId}`, () =>
      this.client.readContract({
        address: this.blueprint,
        abi: agentSandboxBlueprintAbi,
        functionName: 'serviceOwner',
        args: [serviceId],
      }),
    );
    return isAddressEqual(o, zeroAddress) ? undefined : getAddress(o);
  }
}
