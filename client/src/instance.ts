// Instance-mode services: where their sandbox is served. Each operator of the service that has
// provisioned it posts its operator API URL with reportProvisioned; the blueprint's
// getOperatorEndpoints view lists them (spec contract.md, "Instance and TEE-instance modes").
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import { type Address, createPublicClient, http } from 'viem';
import { ClientError } from './errors.ts';

export interface InstanceEndpoint {
  operator: Address;
  url: string;
}

/** The operators serving the instance sandbox of `serviceId`, with their API URLs (may be empty). */
export async function instanceEndpoints(
  rpcUrl: string,
  blueprint: Address,
  serviceId: bigint,
): Promise<InstanceEndpoint[]> {
  const pub = createPublicClient({ transport: http(rpcUrl) });
  let operators: readonly Address[];
  let urls: readonly string[];
  try {
    [operators, urls] = await pub.readContract({
      address: blueprint,
      abi: agentSandboxBlueprintAbi,
      functionName: 'getOperatorEndpoints',
      args: [serviceId],
    });
  } catch (e) {
    throw new ClientError(
      'CHAIN',
      `cannot read the endpoints of service ${serviceId} from ${blueprint} (${(e as Error).message.split('\n')[0]}); check --rpc and --blueprint (the instance contract)`,
    );
  }
  return operators
    .map((operator, i) => ({ operator, url: urls[i] ?? '' }))
    .filter((e) => /^https?:\/\//.test(e.url));
}

/** The Tangle contract an instance blueprint answers to (its public `tangleCore`). */
export async function instanceTangle(rpcUrl: string, blueprint: Address): Promise<Address> {
  const pub = createPublicClient({ transport: http(rpcUrl) });
  try {
    return await pub.readContract({
      address: blueprint,
      abi: agentSandboxBlueprintAbi,
      functionName: 'tangleCore',
    });
  } catch (e) {
    throw new ClientError(
      'CHAIN',
      `cannot read the Tangle address from ${blueprint} (${(e as Error).message.split('\n')[0]}); check --rpc and --blueprint, or pass --tangle ADDR`,
    );
  }
}
