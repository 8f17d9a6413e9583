// The operator's approval policy for service requests: which requests `run` approves by itself
// (AUTO_APPROVE_*; off by default: every request then waits for `requests approve`), and the
// loop that applies it. Requests outside the limits are left for a human, never auto-rejected.
import { sandboxCreateRequestParams } from '@agent-sandbox/contracts';
import {
  approveServiceRequest,
  type ChainContext,
  listServiceRequests,
  type ServiceRequestInfo,
} from '@agent-sandbox/sdk';
import { type Address, decodeAbiParameters, type Hex, zeroAddress } from 'viem';

export interface ApprovalLimits {
  enabled: boolean;
  /** Largest cpu_cores / memory_mb / disk_gb a request's sandbox may ask for. */
  maxCpuCores: number;
  maxMemoryMb: number;
  maxDiskGb: number;
  /** Longest service ttl in seconds; 0 = any (a perpetual request, ttl 0, passes only then). */
  maxTtlSeconds: number;
  /** Least native payment (wei) a request must carry; ERC20-paid requests pass only when 0. */
  minPaymentWei: bigint;
  /** Only these requesters (empty = anyone). */
  requesters: readonly Address[];
}

export const APPROVAL_OFF: ApprovalLimits = {
  enabled: false,
  maxCpuCores: 0,
  maxMemoryMb: 0,
  maxDiskGb: 0,
  maxTtlSeconds: 0,
  minPaymentWei: 0n,
  requesters: [],
};

export interface ApprovalDecision {
  approve: boolean;
  /** Why not (empty when approved). */
  reasons: string[];
}

/** The request's sandbox spec, when its config is an ABI-encoded SandboxCreateRequest. */
export function decodeServiceConfig(
  config: Hex,
): { cpu: bigint; memoryMb: bigint; diskGb: bigint } | undefined {
  if (config === '0x') return undefined;
  for (const form of ['flat', 'tuple'] as const) {
    try {
      const v =
        form === 'flat'
          ? decodeAbiParameters(sandboxCreateRequestParams, config)
          : (decodeAbiParameters(
              [{ type: 'tuple', components: sandboxCreateRequestParams }],
              config,
            )[0] as unknown as readonly unknown[]);
      const byName = (n: string) => {
        const i = sandboxCreateRequestParams.findIndex((p) => p.name === n);
        return (Array.isArray(v) ? v[i] : (v as unknown as Record<string, unknown>)[n]) as bigint;
      };
      return { cpu: byName('cpu_cores'), memoryMb: byName('memory_mb'), diskGb: byName('disk_gb') };
    } catch {}
  }
  return undefined;
}

/** Decides one request against the limits. `instance`: the blueprint provisions from the config. */
export function decideApproval(
  q: ServiceRequestInfo,
  limits: ApprovalLimits,
  instance: boolean,
): ApprovalDecision {
  const reasons: string[] = [];
  if (!limits.enabled) return { approve: false, reasons: ['auto-approval is off (AUTO_APPROVE_REQUESTS)'] };
  if (!q.call)
    return {
      approve: false,
      reasons: ['the request was sent through another contract: its terms are unknown'],
    };
  const c = q.call;
  if (
    limits.requesters.length > 0 &&
    !limits.requesters.some((r) => r.toLowerCase() === q.requester.toLowerCase())
  ) {
    reasons.push(`requester ${q.requester} is not in AUTO_APPROVE_REQUESTERS`);
  }
  if (limits.maxTtlSeconds > 0 && (c.ttl === 0n || c.ttl > BigInt(limits.maxTtlSeconds))) {
    reasons.push(`ttl ${c.ttl === 0n ? 'unlimited' : `${c.ttl} s`} exceeds ${limits.maxTtlSeconds} s`);
  }
  if (limits.minPaymentWei > 0n) {
    if (c.paymentToken !== zeroAddress)
      reasons.push(`paid in ERC20 ${c.paymentToken}, the policy counts native wei`);
    else if (c.paymentAmount < limits.minPaymentWei) {
      reasons.push(`payment ${c.paymentAmount} wei is below ${limits.minPaymentWei} wei`);
    }
  }
  if (instance) {
    const spec = decodeServiceConfig(c.config);
    if (!spec) reasons.push('the config is not an ABI-encoded SandboxCreateRequest');
    else {
      const over = (what: string, v: bigint, max: number) => {
        if (max > 0 && v > BigInt(max)) reasons.push(`${what} ${v} exceeds ${max}`);
      };
      over('cpu_cores', spec.cpu, limits.maxCpuCores);
      over('memory_mb', spec.memoryMb, limits.maxMemoryMb);
      over('disk_gb', spec.diskGb, limits.maxDiskGb);
    }
  }
  return { approve: reasons.length === 0, reasons };
}

export interface AutoApproverOptions {
  ctx: ChainContext;
  tangle: Address;
  blueprintId: bigint;
  operator: Address;
  instance: boolean;
  limits: ApprovalLimits;
  intervalMs: number;
  fromBlock?: bigint | undefined;
  log: {
    info: (o: object, m: string) => void;
    warn: (o: object, m: string) => void;
  };
}

/** Polls the blueprint's pending requests naming this operator and approves those within limits. */
export function startAutoApprover(o: AutoApproverOptions): {
  stop: () => Promise<void>;
  tick: () => Promise<void>;
} {
  const seen = new Set<bigint>();
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const tick = async () => {
    const pending = await listServiceRequests(o.ctx, o.tangle, {
      blueprintId: o.blueprintId,
      operator: o.operator,
      states: ['pending'],
      fromBlock: o.fromBlock,
    });
    for (const q of pending) {
      if (q.approvedBy.some((a) => a.toLowerCase() === o.operator.toLowerCase())) continue;
      const d = decideApproval(q, o.limits, o.instance);
      const ref = { requestId: `${q.requestId}`, requester: q.requester };
      if (!d.approve) {
        if (!seen.has(q.requestId))
          o.log.info({ ...ref, reasons: d.reasons }, 'service request left for manual review');
        seen.add(q.requestId);
        continue;
      }
      try {
        const r = await approveServiceRequest(o.ctx, o.tangle, q.requestId);
        o.log.info(
          { ...ref, tx: r.txHash, serviceId: r.serviceId?.toString() },
          'service request auto-approved',
        );
      } catch (err) {
        o.log.warn({ ...ref, err }, 'auto-approval failed; will retry');
      }
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const loop = () => {
    running = tick()
      .catch((err: unknown) => o.log.warn({ err }, 'reading service requests failed; will retry'))
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, o.intervalMs);
      });
  };
  if (o.limits.enabled) loop();
  return {
    tick,
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
