// Sets up this blueprint on a Tangle deployment with the role tools a real network would see
// (the same functions the `deploy-blueprint`, `stake`, `register`, `requests approve` and
// `service request` commands call): managers and blueprints, operators staked and registered,
// one service per blueprint requested and approved. Used by the stand-in devnet and by
// `--real-tangle` alike.

import {
  agentSandboxDefinition,
  type BlueprintMode,
  deployAgentSandboxBlueprints,
} from '@agent-sandbox/blueprint-lib/definition';
import {
  blueprintServiceManagerBaseAbi,
  blueprintServiceManagerBaseBytecode,
} from '@agent-sandbox/contracts';
import {
  approveServiceRequest,
  type BlueprintDefinition,
  type ChainContext,
  containerSource,
  createBlueprint,
  defineBlueprint,
  defineJob,
  deployContract,
  OperatorKey,
  register,
  requestService,
  stakeOperator,
  stakeStatus,
  waitForServiceActivation,
} from '@agent-sandbox/sdk';
import { type Abi, type Address, encodeAbiParameters, type Hex, parseEther } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { DevnetAccount, DevnetRole } from './accounts.ts';
import { encodeSandboxCreateRequest, sampleSandboxCreateRequest } from './job-encoding.ts';
import { DEVNET_KINDS, type DevnetKind } from './state.ts';

/** Capacity each operator declares at registration (`abi.encode(uint32 capacity)`). */
export const CAPACITY: Record<'operator1' | 'operator2', number> = { operator1: 100, operator2: 50 };
/** The operator API address each operator announces; nothing listens there until an operator runs. */
export const OPERATOR_RPC: Record<'operator1' | 'operator2', string> = {
  operator1: 'http://127.0.0.1:9090',
  operator2: 'http://127.0.0.1:9091',
};
/** Tangle's confidentiality policy per service: TEE instance asks for TEE (1), the rest any (0). */
const CONFIDENTIALITY: Record<DevnetKind, number> = { cloud: 0, instance: 0, teeInstance: 1, toy: 0 };

/**
 * The sandbox image as the devnet's blueprints name it. Each devnet operator builds the image
 * itself (content-hash tagged), so there is no registry digest: the sha256 names the devnet's
 * stand-in image, not a pullable one (a real deployment passes the image's digest).
 */
export const DEVNET_IMAGE = {
  registry: 'local',
  image: 'agent-sandbox',
  tag: 'devnet',
  sha256: '5d5a3c6f2e0b4f1f9a7e3c2d1b0a99887766554433221100ffeeddccbbaa0001',
};
const MODE: Record<Exclude<DevnetKind, 'toy'>, BlueprintMode> = {
  cloud: 'cloud',
  instance: 'instance',
  teeInstance: 'tee-instance',
};

/** The definition each devnet blueprint is created with: ours for the three managers, a toy one. */
export function devnetDefinition(kind: DevnetKind, manager: Address): BlueprintDefinition {
  if (kind !== 'toy') return agentSandboxDefinition({ manager, mode: MODE[kind], image: DEVNET_IMAGE });
  return defineBlueprint({
    metadataUri: 'devnet://agent-sandbox/toy',
    manager,
    metadata: { name: 'toy', description: 'accepts any job of its 16 and any input' },
    jobs: Array.from({ length: 16 }, (_, i) =>
      defineJob({
        name: `job${i}`,
        description: 'any input',
        params: [{ type: 'bytes' }],
        result: [{ type: 'bytes' }],
      }),
    ),
    sources: [containerSource({ ...DEVNET_IMAGE, image: 'toy' })],
  });
}

export interface RolesSetup {
  contracts: Record<DevnetKind, Address>;
  blueprints: Record<DevnetKind, number>;
  services: Record<DevnetKind, number>;
}

export interface RolesSetupOptions {
  rpcUrl: string;
  tangle: Address;
  /** MultiAssetDelegation (or the devnet's LocalStaking): operators stake there first. */
  staking?: Address | undefined;
  accounts: Record<DevnetRole, DevnetAccount>;
  log: (line: string) => void;
  /** Self-stake an operator deposits when it is not active yet (default: the contract's minimum, at least 1 ether). */
  stake?: bigint | undefined;
  pollingIntervalMs?: number | undefined;
}

export async function setUpWithRoleTools(o: RolesSetupOptions): Promise<RolesSetup> {
  const poll = o.pollingIntervalMs ?? 20;
  const ctx = (role: DevnetRole): ChainContext => ({
    rpcUrl: o.rpcUrl,
    account: privateKeyToAccount(o.accounts[role].privateKey),
    pollingIntervalMs: poll,
  });

  // 1. blueprint developer: three managers and their blueprints, and the toy manager's.
  const deployed = await deployAgentSandboxBlueprints(ctx('deployer'), {
    tangle: o.tangle,
    modes: ['cloud', 'instance', 'tee-instance'],
    image: DEVNET_IMAGE,
  });
  const toy = await deployContract(ctx('deployer'), {
    label: 'BlueprintServiceManagerBase (toy)',
    abi: blueprintServiceManagerBaseAbi as Abi,
    bytecode: blueprintServiceManagerBaseBytecode,
    args: [],
  });
  // The toy blueprint takes any of its 16 jobs with any input (the sdk's runner tests use job 9).
  const toyDef = devnetDefinition('toy', toy.address);
  const toyBp = await createBlueprint(ctx('deployer'), o.tangle, toyDef);
  const contracts = {} as Record<DevnetKind, Address>;
  const blueprints = {} as Record<DevnetKind, number>;
  for (const d of deployed) {
    const kind = d.mode === 'tee-instance' ? 'teeInstance' : d.mode;
    contracts[kind] = d.manager;
    blueprints[kind] = Number(d.blueprintId);
  }
  contracts.toy = toy.address;
  blueprints.toy = Number(toyBp.blueprintId);
  o.log(
    `created blueprints ${DEVNET_KINDS.map((k) => `${k}=${blueprints[k]}`).join(' ')} with deploy-blueprint`,
  );

  // 2. operators: stake (when a staking contract is known), then register on every blueprint.
  await Promise.all(
    (['operator1', 'operator2'] as const).map(async (op) => {
      if (o.staking) {
        const st = await stakeStatus(ctx(op), o.staking, o.accounts[op].address);
        if (!st.active) {
          const want =
            o.stake ?? (st.minOperatorStake > parseEther('1') ? st.minOperatorStake : parseEther('1'));
          await stakeOperator(ctx(op), o.staking, want);
        }
      }
      const key = new OperatorKey(privateKeyToAccount(o.accounts[op].privateKey), 'dev', '(devnet account)');
      for (const k of DEVNET_KINDS) {
        await register({
          httpRpcUrl: o.rpcUrl,
          tangle: o.tangle,
          blueprintId: BigInt(blueprints[k]),
          key,
          rpcAddress: OPERATOR_RPC[op],
          registrationInputs: encodeAbiParameters([{ type: 'uint32' }], [CAPACITY[op]]),
          logger: silentLogger,
        });
      }
    }),
  );
  o.log(
    `operator1 (capacity 100) and operator2 (capacity 50)${o.staking ? ' staked and' : ''} registered on every blueprint`,
  );

  // 3. user side: one service request per blueprint (instance services carry their sandbox spec).
  const config = (k: DevnetKind): Hex => {
    if (k === 'instance')
      return encodeSandboxCreateRequest(sampleSandboxCreateRequest({ name: 'devnet-instance' }));
    if (k === 'teeInstance') {
      return encodeSandboxCreateRequest(
        sampleSandboxCreateRequest({ name: 'devnet-tee-instance', tee_required: true, tee_type: 1 }),
      );
    }
    return '0x';
  };
  const ops = [o.accounts.operator1.address, o.accounts.operator2.address];
  const callers = [o.accounts.serviceOwner.address, o.accounts.user.address];
  const requests: Array<{ kind: DevnetKind; requestId: bigint; block: bigint }> = [];
  for (const k of DEVNET_KINDS) {
    const r = await requestService(ctx('serviceOwner'), o.tangle, {
      blueprintId: BigInt(blueprints[k]),
      operators: ops,
      config: config(k),
      permittedCallers: callers,
      confidentiality: CONFIDENTIALITY[k],
    });
    requests.push({ kind: k, requestId: r.requestId, block: r.blockNumber });
  }

  // 4. operators approve (`requests approve`): the second approval activates each service.
  for (const op of ['operator1', 'operator2'] as const) {
    for (const q of requests) await approveServiceRequest(ctx(op), o.tangle, q.requestId);
  }
  const services = {} as Record<DevnetKind, number>;
  for (const q of requests) {
    const a = await waitForServiceActivation(ctx('serviceOwner'), o.tangle, q.requestId, {
      timeoutMs: 30_000,
      fromBlock: q.block,
    });
    services[q.kind] = Number(a.serviceId);
  }
  o.log(
    `activated services ${DEVNET_KINDS.map((k) => `${k}=${services[k]}`).join(' ')} (requested, then approved)`,
  );
  return { contracts, blueprints, services };
}

const noop = () => {};
const silentLogger = {
  child: () => silentLogger,
  info: noop,
  warn: noop,
  error: noop,
  debug: noop,
  trace: noop,
  fatal: noop,
} as unknown as import('pino').Logger;
