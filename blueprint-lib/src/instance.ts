// Instance modes: the service's one sandbox, provisioned from the service's config (an
// ABI-encoded SandboxCreateRequest kept by the blueprint) and reported on chain with
// reportProvisioned. Idempotent: the runtime create is keyed by the attempt's call id
// (`instance-S`, then `instance-S-2`, … after a failed attempt), and an operator already
// provisioned on chain does not report again. In tee-instance mode the report carries the v1
// attestation document over the on-chain nonce (spec tee.md §3, §4). The supervisor that decides
// when to provision, retry, resume and deprovision is instance-supervisor.ts.
import { contextString, onChainNonce, TEE_TYPE_CODE, type TeeKind } from '@agent-sandbox/attestation';
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import { jobArg } from '@agent-sandbox/sdk';
import type { Logger } from 'pino';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  type Hex,
  http,
  keccak256,
  type LocalAccount,
  type PublicClient,
  zeroHash,
} from 'viem';
import type { OperatorMode, RuntimeCreateParams, SandboxFacts } from './deps.ts';
import { BlueprintError } from './errors.ts';
import { SANDBOX_CREATE_INPUT } from './jobs.ts';
import { type CreatePolicy, runtimeCreateParams, validateCreateRequest } from './validate.ts';

export interface InstanceOptions {
  mode: Exclude<OperatorMode, 'cloud'>;
  /** Which attempt this is (1 unless an earlier one failed): picks the runtime call id. */
  attempt?: number;
  httpRpcUrl: string;
  blueprint: Address;
  serviceId: bigint;
  account: LocalAccount;
  sandboxes: { create(params: RuntimeCreateParams): Promise<SandboxFacts> };
  policy: CreatePolicy;
  operatorApiUrl: string;
  log: Logger;
  /** tee-instance mode: the TEE side (runtime TeeService) and the chain id of the binding. */
  tee?: InstanceTee;
}

export interface InstanceTee {
  chainId: bigint;
  teeType: TeeKind;
  onChainDocument(sandboxId: string, nonce: Uint8Array): Promise<{ json: string }>;
  /** TEE_BACKEND=phala: the sandbox is a CVM the backend deploys, not a container of this host. */
  deploy?(p: CreateSandboxInput): Promise<SandboxFacts>;
}

/** What the instance sandbox is created from (the runtime's create params). */
export type CreateSandboxInput = RuntimeCreateParams;

/** The binding context of a sandbox of this service and operator (`chainId:serviceId:sandboxId:operator:owner`). */
export const teeContextFor =
  (chainId: bigint, serviceId: bigint, operator: Address, owner: Address) =>
  (sandboxId: string): string =>
    contextString({ chainId, serviceId, sandboxId, operator, owner });

export interface ProvisionedInstance {
  sandbox: SandboxFacts;
  /** The reportProvisioned transaction, or undefined when the chain already had this provision. */
  reportTx: Hex | undefined;
}

const NONCE_CLASH =
  /nonce too low|nonce has already been used|replacement transaction underpriced|already known/i;

/** The runtime call id of attempt `attempt` at the instance sandbox of a service. */
export const instanceCallId = (serviceId: bigint, attempt = 1): string =>
  attempt <= 1 ? `instance-${serviceId}` : `instance-${serviceId}-${attempt}`;

/** The attempt number a runtime call id names for this service, or undefined when it is not one. */
export function instanceAttempt(callId: string, serviceId: bigint): number | undefined {
  const m = /^instance-(\d+)(?:-(\d+))?$/.exec(callId);
  if (!m || m[1] !== `${serviceId}`) return undefined;
  return m[2] ? Number(m[2]) : 1;
}

/** The sandbox records an instance lookup reads (SandboxManager.list() fits). */
export interface InstanceRecords {
  list(filter?: { serviceId?: string }): Array<{ id: string; callId: string; state: string }>;
}

/**
 * The instance sandbox of service `serviceId` on this operator: the newest attempt's sandbox,
 * unless that one failed or expired. For anything that acts on "the service's sandbox" (the API's
 * `/api/sandbox/…`, instance-target workflows). Reads the store, so it holds across restarts.
 */
export function instanceSandboxOf(
  records: InstanceRecords,
  serviceId: bigint,
): { id: string; state: string; attempt: number } | undefined {
  let newest: { id: string; state: string; attempt: number } | undefined;
  for (const r of records.list({ serviceId: `${serviceId}` })) {
    const attempt = instanceAttempt(r.callId, serviceId);
    if (attempt !== undefined && (!newest || attempt > newest.attempt))
      newest = { id: r.id, state: r.state, attempt };
  }
  return newest && newest.state !== 'failed' && newest.state !== 'expired' ? newest : undefined;
}

/** The service owner, as the blueprint contract stores it (the TEE enclave's one owner). */
export async function readServiceOwner(
  httpRpcUrl: string,
  blueprint: Address,
  serviceId: bigint,
): Promise<Address> {
  return (await createPublicClient({ transport: http(httpRpcUrl) }).readContract({
    address: blueprint,
    abi: agentSandboxBlueprintAbi,
    functionName: 'serviceOwner' as never,
    args: [serviceId] as never,
  })) as Address;
}

export async function provisionInstance(o: InstanceOptions): Promise<ProvisionedInstance> {
  const pub = createPublicClient({ transport: http(o.httpRpcUrl) });
  const read = <T>(functionName: string, args: readonly unknown[]) =>
    pub.readContract({
      address: o.blueprint,
      abi: agentSandboxBlueprintAbi,
      functionName: functionName as never,
      args: args as never,
    }) as Promise<T>;
  const [config, owner] = await Promise.all([
    readServiceConfig(pub as PublicClient, o.blueprint, o.serviceId),
    read<Address>('serviceOwner', [o.serviceId]),
  ]);
  if (!config || config === '0x') {
    throw new BlueprintError(
      'NOT_FOUND',
      `service ${o.serviceId} has no instance config on ${o.blueprint}; is it an instance-mode service?`,
    );
  }
  const request = jobArg(SANDBOX_CREATE_INPUT, { job: 'instance config' })(config);
  if (o.mode === 'tee-instance' && (!o.policy.teeAvailable || !o.tee)) {
    throw new BlueprintError(
      'TEE_UNAVAILABLE',
      'tee-instance mode needs a TEE backend and this host has none; run this service on a TEE operator',
    );
  }
  if (o.tee && request.tee_type !== 0 && request.tee_type !== TEE_TYPE_CODE[o.tee.teeType]) {
    throw new BlueprintError(
      'TEE_UNAVAILABLE',
      `the service asks for tee_type ${request.tee_type} and this operator's TEE is ${o.tee.teeType} (${TEE_TYPE_CODE[o.tee.teeType]})`,
    );
  }
  const v = validateCreateRequest(
    { ...request, tee_required: request.tee_required && o.policy.teeAvailable },
    o.policy,
  );
  if (v.fromSandbox || v.fromSnapshot) {
    // An instance's one sandbox starts fresh; copies are made by the create job of a cloud service.
    throw new BlueprintError(
      'INVALID_REQUEST',
      'capabilities_json: from_sandbox / from_snapshot are for the create job of a cloud service; an instance sandbox starts fresh',
      { details: { field: 'capabilities_json' } },
    );
  }
  // Exempt from the idle/lifetime timers and GC unless the service's config sets either timer.
  const expiryExempt = request.idle_timeout_seconds === 0n && request.max_lifetime_seconds === 0n;
  o.log.info(
    { serviceId: `${o.serviceId}`, image: v.image, owner, attempt: o.attempt ?? 1, expiryExempt },
    'provisioning the instance sandbox',
  );
  const params: CreateSandboxInput = {
    owner,
    serviceId: `${o.serviceId}`,
    callId: instanceCallId(o.serviceId, o.attempt),
    expiryExempt,
    ...runtimeCreateParams(v),
    // A TEE sandbox takes env from its owner only (over the owner channel): the chain's env_json
    // reaches this program through an RPC the operator picks, so it could be the operator's own
    // (an agent command, a base URL), planted before the owner's secrets arrive.
    ...(o.tee ? { env: {} } : {}),
  };
  const sandbox = o.tee?.deploy ? await o.tee.deploy(params) : await o.sandboxes.create(params);
  const already = await read<boolean>('isOperatorProvisioned', [o.serviceId, o.account.address]);
  if (already) {
    o.log.info({ sandboxId: sandbox.id }, 'instance already reported on chain');
    return { sandbox, reportTx: undefined };
  }
  return { sandbox, reportTx: await reportProvisioned(o, sandbox.id) };
}

/** Sends reportProvisioned for `sandboxId` (with the attestation in tee-instance mode). */
export async function reportProvisioned(
  o: Omit<InstanceOptions, 'sandboxes' | 'attempt'>,
  sandboxId: string,
): Promise<Hex> {
  const pub = createPublicClient({ transport: http(o.httpRpcUrl) });
  const sandbox = { id: sandboxId };
  let attestation = '';
  if (o.mode === 'tee-instance' && o.tee) {
    const nonce = onChainNonce(o.tee.chainId, o.serviceId, o.account.address);
    attestation = (await o.tee.onChainDocument(sandbox.id, nonce)).json;
    o.log.info(
      { sandboxId: sandbox.id, bytes: attestation.length },
      'attestation document made for the chain',
    );
  }
  const wallet = createWalletClient({ account: o.account, transport: http(o.httpRpcUrl) });
  const { request: tx } = await pub.simulateContract({
    account: o.account,
    address: o.blueprint,
    abi: agentSandboxBlueprintAbi,
    functionName: 'reportProvisioned',
    // The endpoint posted is the operator API (the sidecar is loopback-only); no secret goes on chain.
    args: [o.serviceId, sandbox.id, o.operatorApiUrl, 0, attestation],
  });
  // The key is shared with the job results and other writes: a nonce taken meanwhile is retried.
  let hash: Hex | undefined;
  for (let attempt = 1; hash === undefined; attempt++) {
    try {
      hash = await wallet.writeContract({ ...tx, nonce: undefined, chain: null });
    } catch (e) {
      if (attempt >= 5 || !NONCE_CLASH.test(String((e as Error)?.message ?? e))) throw e;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
  const receipt = await pub.waitForTransactionReceipt({ hash, pollingInterval: 200 });
  if (receipt.status !== 'success')
    throw new BlueprintError('CHAIN', `reportProvisioned reverted (tx ${hash})`);
  o.log.info({ sandboxId: sandbox.id, tx: hash }, 'instance reported on chain');
  return hash;
}

/**
 * An instance service's config: the manager keeps only its keccak256 (storing ~1 KB would not
 * fit the 500k gas of Tangle's onRequest hook) and emits the bytes in ServiceConfigRequested;
 * this reads that event and checks it against the hash. '0x': not an instance service.
 */
export async function readServiceConfig(
  pub: PublicClient,
  blueprint: Address,
  serviceId: bigint,
): Promise<Hex> {
  const [requestId, hash] = (await pub.readContract({
    address: blueprint,
    abi: agentSandboxBlueprintAbi,
    functionName: 'getServiceConfigRef',
    args: [serviceId],
  })) as readonly [bigint, Hex];
  if (hash === zeroHash) return '0x';
  const logs = await pub.getContractEvents({
    address: blueprint,
    abi: agentSandboxBlueprintAbi,
    eventName: 'ServiceConfigRequested',
    args: { requestId },
    fromBlock: 'earliest',
    toBlock: 'latest',
  });
  for (const l of logs) {
    const config = (l.args as { config?: Hex }).config;
    if (config && keccak256(config) === hash) return config;
  }
  throw new BlueprintError(
    'CHAIN',
    `service ${serviceId}'s config (request ${requestId}) is not in ${blueprint}'s ServiceConfigRequested logs; is the RPC node pruned?`,
  );
}
