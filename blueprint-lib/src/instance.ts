// Instance modes: the service's one sandbox, provisioned at startup from the service's config
// (an ABI-encoded SandboxCreateRequest kept by the blueprint) and reported on chain with
// reportProvisioned. Idempotent: the runtime create is keyed by a fixed call id, and an operator
// already provisioned on chain does not report again. In tee-instance mode the report carries
// the v1 attestation document over the on-chain nonce (spec tee.md §3, §4).
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
  type LocalAccount,
} from 'viem';
import type { OperatorMode, SandboxFacts, SandboxRuntime } from './deps.ts';
import { BlueprintError } from './errors.ts';
import { SANDBOX_CREATE_INPUT } from './jobs.ts';
import { type CreatePolicy, validateCreateRequest } from './validate.ts';

export interface InstanceOptions {
  mode: Exclude<OperatorMode, 'cloud'>;
  httpRpcUrl: string;
  blueprint: Address;
  serviceId: bigint;
  account: LocalAccount;
  sandboxes: SandboxRuntime;
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
export type CreateSandboxInput = Parameters<SandboxRuntime['create']>[0];

/** The binding context of a sandbox of this service and operator (`chainId:serviceId:sandboxId:operator`). */
export const teeContextFor =
  (chainId: bigint, serviceId: bigint, operator: Address) =>
  (sandboxId: string): string =>
    contextString({ chainId, serviceId, sandboxId, operator });

export interface ProvisionedInstance {
  sandbox: SandboxFacts;
  /** The reportProvisioned transaction, or undefined when the chain already had this provision. */
  reportTx: Hex | undefined;
}

/** The runtime call id an instance's sandbox is keyed by (one per service). */
export const instanceCallId = (serviceId: bigint): string => `instance-${serviceId}`;

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
    read<Hex>('getServiceConfig', [o.serviceId]),
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
  o.log.info({ serviceId: `${o.serviceId}`, image: v.image, owner }, 'provisioning the instance sandbox');
  const params: CreateSandboxInput = {
    owner,
    serviceId: `${o.serviceId}`,
    callId: instanceCallId(o.serviceId),
    name: v.name,
    image: v.image,
    cpuCores: v.cpuCores,
    memoryMb: v.memoryMb,
    diskGb: v.diskGb,
    idleTimeoutSeconds: v.idleTimeoutSeconds,
    maxLifetimeSeconds: v.maxLifetimeSeconds,
    env: v.env,
    metadata: v.metadata,
    exposedPorts: v.exposedPorts,
  };
  const sandbox = o.tee?.deploy ? await o.tee.deploy(params) : await o.sandboxes.create(params);
  const already = await read<boolean>('isOperatorProvisioned', [o.serviceId, o.account.address]);
  if (already) {
    o.log.info({ sandboxId: sandbox.id }, 'instance already reported on chain');
    return { sandbox, reportTx: undefined };
  }
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
  const hash = await wallet.writeContract({ ...tx, chain: null });
  const receipt = await pub.waitForTransactionReceipt({ hash, pollingInterval: 200 });
  if (receipt.status !== 'success')
    throw new BlueprintError('CHAIN', `reportProvisioned reverted (tx ${hash})`);
  o.log.info({ sandboxId: sandbox.id, tx: hash }, 'instance reported on chain');
  return { sandbox, reportTx: hash };
}
