// Jobs 0 (create) and 1 (delete) submitted through the user's wallet (EIP-1193 injected provider),
// with the same encoding the CLI uses (client's pure job-io module). Loaded on demand.
import {
  buildCreateRequest,
  decodeCreateOutput,
  encodeCreateInput,
  encodeDeleteInput,
  JOB_SANDBOX_CREATE,
  JOB_SANDBOX_DELETE,
} from '@agent-sandbox/client/browser';
import { agentSandboxBlueprintAbi, describeRevert, iTangleAbi } from '@agent-sandbox/contracts';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  custom,
  getAbiItem,
  type Hex,
  parseEventLogs,
  toEventSelector,
} from 'viem';
import { injected } from './wallet.ts';

export interface ChainInfo {
  chainId: number;
  tangle: Address;
  serviceId: bigint;
}

const jobSubmitted = toEventSelector(getAbiItem({ abi: iTangleAbi, name: 'JobSubmitted' }));

/** A refused job as a readable Error: the manager's own error, unwrapped from ManagerReverted. */
export function refusal(e: unknown): Error {
  const r = describeRevert(e);
  if (r === undefined) return e instanceof Error ? e : new Error(String(e));
  return new Error(`the job was refused: ${r === 'no-data' ? 'reverted without a reason' : r.text}`, {
    cause: e,
  });
}

async function submit(
  info: ChainInfo,
  account: Address,
  jobIndex: number,
  inputs: Hex,
): Promise<{ callId: bigint; txHash: Hex; blockNumber: bigint; operator: Address | undefined }> {
  const provider = injected();
  const transport = custom(provider);
  const pub = createPublicClient({ transport });
  const wallet = createWalletClient({ account, transport });
  const { request } = await pub
    .simulateContract({
      account,
      address: info.tangle,
      abi: iTangleAbi,
      functionName: 'submitJob',
      args: [info.serviceId, jobIndex, inputs],
    })
    .catch((e: unknown) => {
      throw refusal(e);
    });
  const txHash = await wallet.writeContract({ ...request, chain: null });
  const receipt = await pub.waitForTransactionReceipt({ hash: txHash, pollingInterval: 250 });
  if (receipt.status !== 'success') throw new Error(`transaction ${txHash} reverted`);
  for (const log of receipt.logs) {
    const [t0, t1, t2] = log.topics;
    if (
      log.address.toLowerCase() === info.tangle.toLowerCase() &&
      t0 === jobSubmitted &&
      t1 &&
      t2 &&
      BigInt(t1) === info.serviceId
    ) {
      const callId = BigInt(t2);
      // The operator the blueprint picked (create) or routed to (delete), from this receipt only.
      const assigned = parseEventLogs({
        abi: agentSandboxBlueprintAbi,
        logs: receipt.logs,
        eventName: ['OperatorAssigned', 'OperatorRouted'],
        strict: false,
      }).find((e) => (e.args as { callId?: bigint }).callId === callId);
      return {
        callId,
        txHash,
        blockNumber: receipt.blockNumber,
        operator: (assigned?.args as { operator?: Address } | undefined)?.operator,
      };
    }
  }
  throw new Error(`transaction ${txHash} emitted no JobSubmitted for service ${info.serviceId}`);
}

export interface CreateForm {
  name: string;
  /** A preset of GET /api/shapes ('' = the operator's default); the numbers (0 = from it) override it. */
  shape: string;
  cpuCores: number;
  memoryMb: number;
  diskGb: number;
  ports: number[];
  /** Public (on chain) environment, a JSON object of strings; secrets go in the secrets panel. */
  envJson: string;
  /** A sandbox id (branch) or snapshot id of the owner's whose workspace to copy; '' = a fresh one. */
  from: string;
  /** Stop timers, seconds (0 = the CLI's defaults: lifetime 3600, idle 900). */
  lifetimeSeconds: number;
  idleTimeoutSeconds: number;
  /** Delete this long after a stop (0 = the operator's default, 30 days unless it says otherwise). */
  deleteAfterStoppedSeconds: number;
  /** false: plain compute (no coding agent, no model credentials, no startup scripts). */
  agent: boolean;
}

/** capabilities_json of the form: the preset, the copy's source and the options (blueprint-lib create-options.ts). */
export function createOptions(
  form: Pick<CreateForm, 'shape' | 'from'> & Partial<Pick<CreateForm, 'deleteAfterStoppedSeconds' | 'agent'>>,
): string {
  const from = form.from.trim();
  const o: Record<string, string | number | boolean> = {};
  if (form.shape) o.shape = form.shape;
  if (from.startsWith('sha256:')) o.from_snapshot = from;
  else if (from) o.from_sandbox = from;
  if (form.deleteAfterStoppedSeconds) o.delete_after_stopped_seconds = form.deleteAfterStoppedSeconds;
  if (form.agent === false) o.agent = false;
  return JSON.stringify(o);
}

/** Job 0 with the CLI's encoding; answers the call id to follow at GET /api/provisions/{callId}. */
export function submitCreate(info: ChainInfo, account: Address, form: CreateForm) {
  const req = buildCreateRequest({
    name: form.name,
    cpu_cores: form.cpuCores,
    memory_mb: form.memoryMb,
    disk_gb: form.diskGb,
    env_json: form.envJson.trim() || '{}',
    metadata_json: form.ports.length ? JSON.stringify({ ports: form.ports }) : '{}',
    capabilities_json: createOptions(form),
    ...(form.lifetimeSeconds ? { max_lifetime_seconds: BigInt(form.lifetimeSeconds) } : {}),
    ...(form.idleTimeoutSeconds ? { idle_timeout_seconds: BigInt(form.idleTimeoutSeconds) } : {}),
  });
  return submit(info, account, JOB_SANDBOX_CREATE, encodeCreateInput(req));
}

/** Job 1 (only the owner may; the blueprint reverts for anyone else). */
export function submitDelete(info: ChainInfo, account: Address, sandboxId: string) {
  return submit(info, account, JOB_SANDBOX_DELETE, encodeDeleteInput(sandboxId));
}

/**
 * The reason a create call was refused, once its result is on chain with no sandbox (a refusal at
 * admission leaves no provision record to follow); undefined while there is none.
 */
export async function createRefusal(
  info: ChainInfo,
  callId: bigint,
  fromBlock: bigint,
): Promise<string | undefined> {
  const pub = createPublicClient({ transport: custom(injected()) });
  const logs = await pub.getContractEvents({
    address: info.tangle,
    abi: iTangleAbi,
    eventName: 'JobResultSubmitted',
    args: { serviceId: info.serviceId, callId },
    fromBlock,
    toBlock: 'latest',
  });
  const output = logs[0]?.args.output;
  if (!output) return undefined;
  const r = decodeCreateOutput(output);
  if (r.sandboxId) return undefined;
  const phase = typeof r.json['phase'] === 'string' ? ` at ${r.json['phase']}` : '';
  return `create refused${phase}: ${typeof r.json['error'] === 'string' ? r.json['error'] : 'the operator gave no reason'}`;
}
