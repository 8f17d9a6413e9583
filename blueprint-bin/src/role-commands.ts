// The role tools of agent-sandbox-operator beyond `run`: the blueprint developer's
// `deploy-blueprint`, and the operator's `stake`, `requests list|approve|reject` and `unregister`.
// Each reads its variables once, prints progress on stderr and its result on stdout (--json: one
// JSON document); exit 0 done, 1 refused or failed on chain, 2 bad usage or configuration.
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import {
  approveServiceRequest,
  type ChainContext,
  listServiceRequests,
  loadKeystore,
  type RequestState,
  rejectServiceRequest,
  type ServiceRequestInfo,
  stakeOperator,
  stakeStatus,
  unregisterOperator,
} from '@agent-sandbox/sdk';
import {
  type Abi,
  type Address,
  formatEther,
  formatUnits,
  type Hex,
  parseEther,
  parseUnits,
  zeroAddress,
} from 'viem';
import { type Command, ConfigError, loadConfig } from './config.ts';

export interface RoleOptions {
  json: boolean;
  env?: Record<string, string | undefined> | undefined;
}

const print = (json: boolean, value: unknown, text: string) =>
  process.stdout.write(
    `${json ? JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}` : v), 2) : text}\n`,
  );

async function context(command: Command, o: RoleOptions) {
  const cfg = loadConfig(command, o.env ?? process.env);
  const v = cfg.values;
  const key = await loadKeystore({
    uri: v.KEYSTORE_URI!,
    password: v.KEYSTORE_PASSWORD,
    testMode: v.TEST_MODE,
  });
  const ctx: ChainContext = {
    rpcUrl: v.HTTP_RPC_URL!,
    account: key.account,
    errorAbis: [agentSandboxBlueprintAbi as Abi],
    progress: (line) => process.stderr.write(`${line}\n`),
    pollingIntervalMs: 250,
  };
  return { cfg, v, key, ctx, tangle: v.TANGLE_CONTRACT as Address };
}

const usage = (variable: string, problem: string) => new ConfigError([{ variable, problem }]);

/** Blueprint developer: deploy the managers of the given modes and create one blueprint each. */
export async function cmdDeployBlueprint(
  o: RoleOptions & {
    modes: string | undefined;
    image: string | undefined;
    imageSha256: string | undefined;
    metadataUri: string | undefined;
    managers: string | undefined;
  },
): Promise<number> {
  const { BLUEPRINT_MODES, deployAgentSandboxBlueprints, parseImageRef } = await import(
    '@agent-sandbox/blueprint-lib/definition'
  );
  const names: Record<string, (typeof BLUEPRINT_MODES)[number]> = {
    cloud: 'cloud',
    instance: 'instance',
    'tee-instance': 'tee-instance',
  };
  const modes = (o.modes ?? 'cloud,instance,tee-instance').split(',').map((m) => {
    const mode = names[m.trim()];
    if (!mode) throw usage('--modes', `"${m}" is not one of cloud, instance, tee-instance`);
    return mode;
  });
  if (!o.image) throw usage('--image', 'is required: the sandbox image operators run (registry/name:tag)');
  if (!o.imageSha256 || !/^(sha256:|0x)?[0-9a-f]{64}$/i.test(o.imageSha256)) {
    throw usage(
      '--image-sha256',
      "is required: the image's content digest, 64 hex (docker image inspect --format '{{.Id}}')",
    );
  }
  const sha = `0x${o.imageSha256.replace(/^(sha256:|0x)/i, '')}` as Hex;
  let image: ReturnType<typeof parseImageRef>;
  try {
    image = parseImageRef(o.image, sha);
  } catch (e) {
    throw usage('--image', (e as Error).message);
  }
  const managers: Partial<Record<string, Address>> = {};
  for (const pair of (o.managers ?? '').split(',').filter(Boolean)) {
    const [m, a] = pair.split('=');
    const mode = names[m?.trim() ?? ''];
    if (!mode || !a || !/^0x[0-9a-fA-F]{40}$/.test(a)) throw usage('--managers', 'expected mode=0xaddress,…');
    managers[mode] = a as Address;
  }
  const { ctx, tangle, key } = await context('deploy-blueprint', o);
  process.stderr.write(`deploying ${modes.join(', ')} for ${key.address} on Tangle ${tangle}\n`);
  const deployed = await deployAgentSandboxBlueprints(ctx, {
    tangle,
    modes,
    image,
    managers,
    metadataUri: o.metadataUri,
  });
  print(
    o.json,
    { tangle, owner: key.address, blueprints: deployed },
    deployed.map((d) => `${d.mode}: blueprint ${d.blueprintId}, manager ${d.manager}`).join('\n'),
  );
  return 0;
}

/** Operator: self-stake in MultiAssetDelegation (registerOperator, or increaseStake). */
export async function cmdStake(o: RoleOptions & { amount: string | undefined }): Promise<number> {
  if (o.amount !== undefined && !/^\d+(\.\d+)?$/.test(o.amount))
    throw usage('--amount', 'expected an amount in whole units of the bond, e.g. 1 or 0.5');
  const { ctx, v, key } = await context('stake', o);
  const staking = v.STAKING_CONTRACT as Address;
  // The amount is in units of the bond: ETH, or the bond token at its own decimals (TNT 18, USDC 6).
  const bond = await stakeStatus(ctx, staking, key.address);
  let wei = 0n;
  if (o.amount !== undefined) {
    try {
      wei = parseUnits(o.amount, bond.bondDecimals);
    } catch {
      throw usage('--amount', `expected at most ${bond.bondDecimals} decimals`);
    }
  }
  const r = await stakeOperator(ctx, staking, wei);
  const unit = r.bondToken === zeroAddress ? 'ETH' : `of the bond token ${r.bondToken}`;
  const fmt = (x: bigint) => formatUnits(x, r.bondDecimals);
  print(
    o.json,
    { ...r, operator: key.address },
    `${key.address}: ${r.active ? 'active' : 'NOT active'} operator, stake ${fmt(r.stake)} ${unit} (minimum ${fmt(r.minOperatorStake)})${r.action === 'none' ? '' : `; ${r.action}`}`,
  );
  return r.active ? 0 : 1;
}

const STATES: readonly RequestState[] = ['pending', 'activated', 'rejected', 'expired'];

function describeRequest(q: ServiceRequestInfo): string {
  const c = q.call;
  const terms = c
    ? `operators ${c.operators.length}, ttl ${c.ttl === 0n ? 'none' : `${c.ttl}s`}, payment ${c.paymentAmount}${c.paymentToken === '0x0000000000000000000000000000000000000000' ? ' wei' : ` of ${c.paymentToken}`}, config ${(c.config.length - 2) / 2} bytes`
    : 'terms unknown (sent through a contract)';
  return `request ${q.requestId}  ${q.state}${q.serviceId !== undefined ? ` → service ${q.serviceId}` : ''}  from ${q.requester}  approvals ${q.approvedBy.length}  ${terms}`;
}

/** Operator: list, approve or reject the service requests of BLUEPRINT_ID naming this operator. */
export async function cmdRequests(
  o: RoleOptions & {
    action: string | undefined;
    id: string | undefined;
    state: string | undefined;
    fromBlock: string | undefined;
  },
): Promise<number> {
  if (!o.action || !['list', 'approve', 'reject'].includes(o.action)) {
    throw usage('requests', 'expected list, approve <request id> or reject <request id>');
  }
  if (o.action !== 'list' && (!o.id || !/^\d+$/.test(o.id)))
    throw usage('<request id>', 'expected a request id');
  const states = o.state === undefined || o.state === 'all' ? undefined : o.state.split(',');
  if (states?.some((s) => !STATES.includes(s as RequestState))) {
    throw usage('--state', `expected all or a list of ${STATES.join(', ')}`);
  }
  if (o.fromBlock !== undefined && !/^\d+$/.test(o.fromBlock))
    throw usage('--from-block', 'expected a block number');
  const { ctx, v, key, tangle } = await context('requests', o);
  const blueprintId = v.BLUEPRINT_ID as bigint;
  if (o.action === 'list') {
    const list = await listServiceRequests(ctx, tangle, {
      blueprintId,
      operator: key.address,
      states: (states ?? ['pending']) as RequestState[],
      // JOB_START_BLOCK's default is 'latest' (where `run` starts following jobs): a request made a
      // block ago is not in it, so only a block number counts here; otherwise read from genesis.
      fromBlock:
        o.fromBlock !== undefined
          ? BigInt(o.fromBlock)
          : typeof v.JOB_START_BLOCK === 'bigint'
            ? v.JOB_START_BLOCK
            : 0n,
    });
    print(
      o.json,
      { blueprintId, operator: key.address, requests: list },
      list.map(describeRequest).join('\n') || '(no requests)',
    );
    return 0;
  }
  const requestId = BigInt(o.id!);
  if (o.action === 'approve') {
    const r = await approveServiceRequest(ctx, tangle, requestId);
    print(
      o.json,
      { requestId, approved: true, ...r },
      `approved request ${requestId}${r.serviceId !== undefined ? `: service ${r.serviceId} is active` : ' (waiting for the other operators)'}`,
    );
    return 0;
  }
  const r = await rejectServiceRequest(ctx, tangle, requestId);
  print(o.json, { requestId, rejected: true, ...r }, `rejected request ${requestId}`);
  return 0;
}

/** Operator: leave BLUEPRINT_ID (refused while serving one of its active services). */
export async function cmdUnregister(o: RoleOptions): Promise<number> {
  const { ctx, v, key, tangle } = await context('unregister', o);
  const blueprintId = v.BLUEPRINT_ID as bigint;
  const r = await unregisterOperator(ctx, tangle, blueprintId);
  print(
    o.json,
    { blueprintId, operator: key.address, unregistered: true, ...r },
    `${key.address} left blueprint ${blueprintId}`,
  );
  return 0;
}
