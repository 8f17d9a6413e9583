// The blueprint developer's deployment: the service-manager contract of each mode (cloud,
// instance, TEE instance) from forge's output, then createBlueprint with its full definition.
import { agentSandboxBlueprintAbi, agentSandboxBlueprintBytecode } from '@agent-sandbox/contracts';
import {
  type ChainContext,
  type ContainerSourceSpec,
  createBlueprint,
  deployContract,
} from '@agent-sandbox/sdk';
import type { Abi, Address, Hex } from 'viem';
import { agentSandboxDefinition, type BlueprintMode } from './agent-sandbox.ts';

export const BLUEPRINT_MODES: readonly BlueprintMode[] = ['cloud', 'instance', 'tee-instance'];

export interface DeployedBlueprint {
  mode: BlueprintMode;
  manager: Address;
  blueprintId: bigint;
  managerTx: Hex;
  blueprintTx: Hex;
}

export interface DeployBlueprintsOptions {
  tangle: Address;
  modes: readonly BlueprintMode[];
  image: ContainerSourceSpec;
  /** Reuse these managers instead of deploying new ones (by mode). */
  managers?: Partial<Record<BlueprintMode, Address>> | undefined;
  metadataUri?: string | undefined;
  codeRepository?: string | undefined;
}

const MODE_ARGS: Record<BlueprintMode, [boolean, boolean]> = {
  cloud: [false, false],
  instance: [true, false],
  'tee-instance': [true, true],
};

/** Deploys (or reuses) each mode's manager and creates its blueprint, in order; the signer owns both. */
export async function deployAgentSandboxBlueprints(
  ctx: ChainContext,
  o: DeployBlueprintsOptions,
): Promise<DeployedBlueprint[]> {
  const out: DeployedBlueprint[] = [];
  const errorAbis = [agentSandboxBlueprintAbi as Abi, ...(ctx.errorAbis ?? [])];
  const c = { ...ctx, errorAbis };
  for (const mode of o.modes) {
    let manager = o.managers?.[mode];
    let managerTx: Hex = '0x';
    if (!manager) {
      const d = await deployContract(c, {
        label: `AgentSandboxBlueprint (${mode})`,
        abi: agentSandboxBlueprintAbi as Abi,
        bytecode: agentSandboxBlueprintBytecode,
        args: MODE_ARGS[mode],
      });
      manager = d.address;
      managerTx = d.txHash;
    }
    const def = agentSandboxDefinition({
      mode,
      manager,
      image: o.image,
      ...(o.metadataUri ? { metadataUri: o.metadataUri } : {}),
      ...(o.codeRepository ? { codeRepository: o.codeRepository } : {}),
    });
    const b = await createBlueprint(c, o.tangle, def);
    ctx.progress?.(`blueprint ${b.blueprintId} (${mode}) created with manager ${manager}`);
    out.push({ mode, manager, blueprintId: b.blueprintId, managerTx, blueprintTx: b.txHash });
  }
  return out;
}

/** Parses "registry/name:tag" (the registry part has a dot or a colon, or is absent). */
export function parseImageRef(ref: string, sha256: string): ContainerSourceSpec {
  const m = /^(?:([^/]*[.:][^/]*)\/)?([^:@]+)(?::([\w][\w.-]{0,127}))?$/.exec(ref.trim());
  if (!m) throw new Error(`"${ref}" is not an image reference (registry/name:tag)`);
  return { registry: m[1] ?? '', image: m[2] ?? '', tag: m[3] ?? 'latest', sha256 };
}
