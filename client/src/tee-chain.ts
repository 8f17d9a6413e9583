// What the chain says about a TEE instance, read through any viem PublicClient (the CLI's RPC,
// or the browser wallet's provider in the console): the operators that reported the service and
// their endpoints, and the v1 attestation document an operator posted, found by its
// TeeAttestationStored event and checked against the hash the contract stores. No node built-ins.
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import {
  type Address,
  decodeFunctionData,
  type Hex,
  toHex as hexOf,
  keccak256,
  type PublicClient,
} from 'viem';
import { ClientError, ExitCode } from './errors.ts';

export interface OnChainAttestation {
  json: string;
  tx: Hex;
  sandboxId: string;
  chainId: bigint;
}

export interface ChainTeeTarget {
  /** The TEE-instance blueprint (service manager) contract. */
  blueprint: Address;
  serviceId: bigint;
  operator: Address;
  /** Where to start looking for the TeeAttestationStored event (RPCs limit log ranges). Default 0. */
  fromBlock?: bigint;
}

/** The service's provisioned operators and the endpoint each reported (reportProvisioned). */
export async function operatorEndpoints(
  pub: PublicClient,
  blueprint: Address,
  serviceId: bigint,
): Promise<Array<{ operator: Address; url: string }>> {
  const [operators, urls] = await pub.readContract({
    address: blueprint,
    abi: agentSandboxBlueprintAbi,
    functionName: 'getOperatorEndpoints',
    args: [serviceId],
  });
  return operators.map((operator, i) => ({ operator, url: urls[i] ?? '' }));
}

/** The document the operator posted, found by its TeeAttestationStored event and checked against the stored hash. */
export async function readOnChainAttestation(
  pub: PublicClient,
  t: ChainTeeTarget,
): Promise<OnChainAttestation> {
  const chainId = BigInt(await pub.getChainId());
  const stored = await pub.readContract({
    address: t.blueprint,
    abi: agentSandboxBlueprintAbi,
    functionName: 'getAttestationHash',
    args: [t.serviceId, t.operator],
  });
  if (/^0x0+$/.test(stored)) {
    throw new ClientError(
      'NOT_FOUND',
      `operator ${t.operator} has no attestation on chain for service ${t.serviceId}`,
      {
        exitCode: ExitCode.NOT_FOUND,
      },
    );
  }
  const logs = await pub.getContractEvents({
    address: t.blueprint,
    abi: agentSandboxBlueprintAbi,
    eventName: 'TeeAttestationStored',
    args: { serviceId: t.serviceId, operator: t.operator },
    fromBlock: t.fromBlock ?? 0n,
  });
  for (const log of logs.reverse()) {
    const tx = await pub.getTransaction({ hash: log.transactionHash });
    let call: ReturnType<typeof decodeFunctionData<typeof agentSandboxBlueprintAbi>>;
    try {
      call = decodeFunctionData({ abi: agentSandboxBlueprintAbi, data: tx.input });
    } catch {
      continue; // sent through a contract wallet: the calldata is not a direct reportProvisioned
    }
    if (call.functionName !== 'reportProvisioned') continue;
    const [, sandboxId, , , json] = call.args as readonly [bigint, string, string, number, string];
    if (keccak256(hexOf(json)) !== stored) continue;
    return { json, tx: log.transactionHash, sandboxId, chainId };
  }
  throw new ClientError(
    'CHAIN',
    'no reportProvisioned transaction carries the attestation whose hash the contract stores',
    {
      exitCode: ExitCode.CHAIN,
    },
  );
}
