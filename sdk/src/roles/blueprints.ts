// Blueprint creation on Tangle from a full BlueprintDefinition (tnt-core 0.19's createBlueprint).
import { iTangleAbi, iTangleLifecycleAbi } from '@agent-sandbox/contracts';
import { type Abi, type AbiParameterToPrimitiveType, type Address, type Hex, parseEventLogs } from 'viem';
import { SdkError } from '../errors.ts';
import { type ChainContext, sendCall } from './tx.ts';

type CreateBlueprintFn = Extract<(typeof iTangleLifecycleAbi)[number], { name: 'createBlueprint' }>;
/** The definition as viem encodes it (enums as numbers), typed from the generated ABI. */
export type BlueprintDefinition = AbiParameterToPrimitiveType<CreateBlueprintFn['inputs'][0]>;

/** Creates the blueprint (the signer becomes its owner); returns its id from BlueprintCreated. */
export async function createBlueprint(
  ctx: ChainContext,
  tangle: Address,
  definition: BlueprintDefinition,
): Promise<{ blueprintId: bigint; txHash: Hex }> {
  const r = await sendCall(ctx, {
    label: `createBlueprint(${definition.metadata.name || definition.metadataUri}, manager ${definition.manager})`,
    address: tangle,
    abi: iTangleLifecycleAbi as Abi,
    functionName: 'createBlueprint',
    args: [definition],
  });
  const [ev] = parseEventLogs({ abi: iTangleAbi, eventName: 'BlueprintCreated', logs: r.logs });
  if (!ev) throw new SdkError('TX', `createBlueprint emitted no BlueprintCreated (tx ${r.transactionHash}).`);
  return { blueprintId: ev.args.blueprintId, txHash: r.transactionHash };
}
