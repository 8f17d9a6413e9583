// Service requests and services on Tangle, for every role: the user requests a service and waits
// for it to activate (or terminates it); an operator lists the requests naming it and approves or
// rejects them. Read from Tangle's events and the requestService call itself (0.19's
// getServiceRequest does not carry the operators or the config).
import { iTangleAbi, iTangleLifecycleAbi } from '@agent-sandbox/contracts';
import {
  type Abi,
  type Address,
  decodeFunctionData,
  type Hex,
  type PublicClient,
  parseEventLogs,
  zeroAddress,
} from 'viem';
import { SdkError } from '../errors.ts';
import { type ChainContext, publicClient, sendCall } from './tx.ts';

export type RequestState = 'pending' | 'activated' | 'rejected' | 'expired';

export interface ServiceRequestInfo {
  requestId: bigint;
  blueprintId: bigint;
  requester: Address;
  confidentiality: number;
  state: RequestState;
  /** The service it became, when activated. */
  serviceId?: bigint | undefined;
  /** Operators that approved so far. */
  approvedBy: Address[];
  rejectedBy: Address[];
  /** From the requestService call; undefined when it was made through another contract. */
  call?:
    | {
        operators: Address[];
        config: Hex;
        permittedCallers: Address[];
        ttl: bigint;
        paymentToken: Address;
        paymentAmount: bigint;
      }
    | undefined;
  blockNumber: bigint;
  txHash: Hex;
}

export interface ListRequestsOptions {
  blueprintId?: bigint | undefined;
  /** Keep only requests naming this operator (those whose operators are unknown are kept). */
  operator?: Address | undefined;
  fromBlock?: bigint | undefined;
  /** Keep only these states (default: all). */
  states?: readonly RequestState[] | undefined;
}

const events = iTangleAbi as Abi;

/** Every service request on `tangle` matching the options, oldest first. */
export async function listServiceRequests(
  ctx: ChainContext,
  tangle: Address,
  opts: ListRequestsOptions = {},
): Promise<ServiceRequestInfo[]> {
  const pub = publicClient(ctx);
  const fromBlock = opts.fromBlock ?? 0n;
  const logs = await pub.getLogs({ address: tangle, fromBlock, toBlock: 'latest' }).catch((e: unknown) => {
    throw new SdkError('RPC', `Cannot read Tangle's events at ${tangle}: check the RPC URL and address.`, {
      cause: e,
    });
  });
  const parsed = parseEventLogs({ abi: events, logs });
  const byId = new Map<bigint, ServiceRequestInfo>();
  for (const ev of parsed) {
    const a = ev.args as Record<string, unknown>;
    if (ev.eventName === 'ServiceRequested') {
      const blueprintId = a['blueprintId'] as bigint;
      if (opts.blueprintId !== undefined && blueprintId !== opts.blueprintId) continue;
      byId.set(a['requestId'] as bigint, {
        requestId: a['requestId'] as bigint,
        blueprintId,
        requester: a['requester'] as Address,
        confidentiality: Number(a['confidentiality']),
        state: 'pending',
        approvedBy: [],
        rejectedBy: [],
        blockNumber: ev.blockNumber,
        txHash: ev.transactionHash,
      });
      continue;
    }
    const q = byId.get(a['requestId'] as bigint);
    if (!q) continue;
    if (ev.eventName === 'ServiceApproved') q.approvedBy.push(a['operator'] as Address);
    if (ev.eventName === 'ServiceRejected') {
      q.rejectedBy.push(a['operator'] as Address);
      q.state = 'rejected';
    }
    if (ev.eventName === 'ServiceActivated') {
      q.state = 'activated';
      q.serviceId = a['serviceId'] as bigint;
    }
  }
  const all = [...byId.values()];
  await Promise.all(all.map((q) => fillCall(pub, tangle, q)));
  await markExpired(pub, tangle, all);
  const me = opts.operator?.toLowerCase();
  return all.filter(
    (q) =>
      (!me || !q.call || q.call.operators.some((o) => o.toLowerCase() === me)) &&
      (!opts.states || opts.states.includes(q.state)),
  );
}

/** One request by id (any state); throws SERVICE_REQUEST when there is none. */
export async function getServiceRequestInfo(
  ctx: ChainContext,
  tangle: Address,
  requestId: bigint,
  fromBlock?: bigint,
): Promise<ServiceRequestInfo> {
  const found = (await listServiceRequests(ctx, tangle, { fromBlock })).find(
    (q) => q.requestId === requestId,
  );
  if (!found) throw new SdkError('SERVICE_REQUEST', `No service request ${requestId} on ${tangle}.`);
  return found;
}

async function fillCall(pub: PublicClient, tangle: Address, q: ServiceRequestInfo): Promise<void> {
  try {
    const tx = await pub.getTransaction({ hash: q.txHash });
    if (!tx.to || tx.to.toLowerCase() !== tangle.toLowerCase()) return;
    const d = decodeFunctionData({ abi: iTangleAbi, data: tx.input });
    if (d.functionName !== 'requestService') return;
    const [, operators, config, permittedCallers, ttl, paymentToken, paymentAmount] = d.args;
    q.call = {
      operators: [...operators],
      config,
      permittedCallers: [...permittedCallers],
      ttl,
      paymentToken,
      paymentAmount,
    };
  } catch {
    // Sent through another contract (a wallet, a multicall): the operators and config stay unknown.
  }
}

/** Pending requests past Tangle's approval window (createdAt + requestExpiryGracePeriod). */
async function markExpired(pub: PublicClient, tangle: Address, all: ServiceRequestInfo[]): Promise<void> {
  const pending = all.filter((q) => q.state === 'pending');
  if (pending.length === 0) return;
  // The protocol's default window is one hour (ProtocolConfig.REQUEST_EXPIRY_GRACE_PERIOD).
  const grace = ((await pub
    .readContract({ address: tangle, abi: iTangleLifecycleAbi, functionName: 'requestExpiryGracePeriod' })
    .catch(() => 0n)) || 3600n) as bigint;
  const now = (await pub.getBlock()).timestamp;
  await Promise.all(
    pending.map(async (q) => {
      const r = (await pub
        .readContract({
          address: tangle,
          abi: iTangleAbi,
          functionName: 'getServiceRequest',
          args: [q.requestId],
        })
        .catch(() => undefined)) as { createdAt: bigint } | undefined;
      if (r && now > r.createdAt + grace) q.state = 'expired';
    }),
  );
}

/** Approves a request as one of its operators (no security, BLS or TEE commitments). */
export async function approveServiceRequest(ctx: ChainContext, tangle: Address, requestId: bigint) {
  const r = await sendCall(ctx, {
    label: `approveService(request ${requestId})`,
    address: tangle,
    abi: iTangleAbi as Abi,
    functionName: 'approveService',
    args: [
      {
        requestId,
        securityCommitments: [],
        blsPubkey: [0n, 0n, 0n, 0n],
        blsPopSignature: [0n, 0n],
        teeCommitments: [],
      },
    ],
  });
  const [activated] = parseEventLogs({ abi: iTangleAbi, eventName: 'ServiceActivated', logs: r.logs });
  return { txHash: r.transactionHash, serviceId: activated?.args.serviceId };
}

export async function rejectServiceRequest(ctx: ChainContext, tangle: Address, requestId: bigint) {
  const r = await sendCall(ctx, {
    label: `rejectService(request ${requestId})`,
    address: tangle,
    abi: iTangleAbi as Abi,
    functionName: 'rejectService',
    args: [requestId],
  });
  return { txHash: r.transactionHash };
}

export interface RequestServiceParams {
  blueprintId: bigint;
  operators: readonly Address[];
  config: Hex;
  permittedCallers?: readonly Address[] | undefined;
  /** Seconds; 0 = no expiry (the real protocol's minimum otherwise is one hour). */
  ttl?: bigint | undefined;
  /** Native payment in wei (paymentToken zero) or an ERC20 amount. */
  paymentAmount?: bigint | undefined;
  paymentToken?: Address | undefined;
  /** 0 any, 1 TEE required, 2 standard required, 3 TEE preferred. */
  confidentiality?: number | undefined;
}

/** Sends requestService; returns the request id from ServiceRequested. */
export async function requestService(ctx: ChainContext, tangle: Address, p: RequestServiceParams) {
  const token = p.paymentToken ?? zeroAddress;
  const amount = p.paymentAmount ?? 0n;
  const r = await sendCall(ctx, {
    label: `requestService(blueprint ${p.blueprintId}, ${p.operators.length} operator(s))`,
    address: tangle,
    abi: iTangleAbi as Abi,
    functionName: 'requestService',
    args: [
      p.blueprintId,
      p.operators,
      p.config,
      p.permittedCallers ?? [],
      p.ttl ?? 0n,
      token,
      amount,
      p.confidentiality ?? 0,
    ],
    value: token === zeroAddress ? amount : 0n,
  });
  const [ev] = parseEventLogs({ abi: iTangleAbi, eventName: 'ServiceRequested', logs: r.logs });
  if (!ev) throw new SdkError('TX', `requestService emitted no ServiceRequested (tx ${r.transactionHash}).`);
  return { requestId: ev.args.requestId, txHash: r.transactionHash, blockNumber: r.blockNumber };
}

/**
 * Waits until the request becomes a service (returns its id), following Tangle's events.
 * Throws SERVICE_REQUEST when an operator rejects it, it expires, or `timeoutMs` passes.
 */
export async function waitForServiceActivation(
  ctx: ChainContext,
  tangle: Address,
  requestId: bigint,
  opts: { timeoutMs?: number; fromBlock?: bigint; onPending?: (q: ServiceRequestInfo) => void } = {},
): Promise<{ serviceId: bigint; request: ServiceRequestInfo }> {
  const deadline = Date.now() + (opts.timeoutMs ?? 600_000);
  const every = ctx.pollingIntervalMs ?? 1000;
  let lastApprovals = -1;
  for (;;) {
    const q = await getServiceRequestInfo(ctx, tangle, requestId, opts.fromBlock);
    if (q.state === 'activated' && q.serviceId !== undefined) return { serviceId: q.serviceId, request: q };
    if (q.state === 'rejected') {
      throw new SdkError(
        'SERVICE_REQUEST',
        `Service request ${requestId} was rejected by ${q.rejectedBy.join(', ')}.`,
        {
          details: { requestId: `${requestId}`, state: q.state },
        },
      );
    }
    if (q.state === 'expired') {
      throw new SdkError(
        'SERVICE_REQUEST',
        `Service request ${requestId} expired before every operator approved it.`,
        {
          details: { requestId: `${requestId}`, state: q.state },
        },
      );
    }
    if (q.approvedBy.length !== lastApprovals) {
      lastApprovals = q.approvedBy.length;
      opts.onPending?.(q);
    }
    if (Date.now() > deadline) {
      throw new SdkError(
        'SERVICE_REQUEST',
        `Service request ${requestId} is still pending (${q.approvedBy.length} of ${q.call?.operators.length ?? '?'} approvals): ask its operators to approve it.`,
        { details: { requestId: `${requestId}`, state: q.state, approvals: q.approvedBy.length } },
      );
    }
    await new Promise((r) => setTimeout(r, every));
  }
}

/** Ends a service (its owner only). */
export async function terminateService(ctx: ChainContext, tangle: Address, serviceId: bigint) {
  const r = await sendCall(ctx, {
    label: `terminateService(${serviceId})`,
    address: tangle,
    abi: iTangleAbi as Abi,
    functionName: 'terminateService',
    args: [serviceId],
  });
  return { txHash: r.transactionHash };
}

/** Leaves a blueprint (refused while the operator serves an active service of it). */
export async function unregisterOperator(ctx: ChainContext, tangle: Address, blueprintId: bigint) {
  const r = await sendCall(ctx, {
    label: `unregisterOperator(blueprint ${blueprintId})`,
    address: tangle,
    abi: iTangleAbi as Abi,
    functionName: 'unregisterOperator',
    args: [blueprintId],
  });
  return { txHash: r.transactionHash };
}
