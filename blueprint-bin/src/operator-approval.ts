// Wires the service-request approval policy into `run` (AUTO_APPROVE_*; off by default).
import { startAutoApprover } from '@agent-sandbox/blueprint-lib/definition';
import type { BlueprintEnvironment, OperatorKey } from '@agent-sandbox/sdk';
import type { Logger } from 'pino';
import type { Address } from 'viem';
import type { OperatorConfig } from './config.ts';
import type { Cleanup } from './operator-startup.ts';

export function startApprovalPolicy(
  cfg: OperatorConfig,
  env: BlueprintEnvironment,
  key: OperatorKey,
  log: Logger,
  cleanup: Cleanup,
): void {
  const v = cfg.values;
  if (!v.AUTO_APPROVE_REQUESTS) return;
  const limits = {
    enabled: true,
    maxCpuCores: v.AUTO_APPROVE_MAX_CPU_CORES ?? 0,
    maxMemoryMb: v.AUTO_APPROVE_MAX_MEMORY_MB ?? 0,
    maxDiskGb: v.AUTO_APPROVE_MAX_DISK_GB ?? 0,
    maxTtlSeconds: v.AUTO_APPROVE_MAX_TTL_SECONDS ?? 0,
    minPaymentWei: v.AUTO_APPROVE_MIN_PAYMENT_WEI ?? 0n,
    requesters: (v.AUTO_APPROVE_REQUESTERS ?? []) as Address[],
  };
  const approver = startAutoApprover({
    ctx: { rpcUrl: env.httpRpcUrl, account: key.account, pollingIntervalMs: 500 },
    tangle: env.tangleContract,
    blueprintId: env.blueprintId,
    operator: key.address,
    instance: cfg.mode !== 'cloud',
    limits,
    intervalMs: v.AUTO_APPROVE_INTERVAL_MS ?? 5000,
    fromBlock: typeof v.JOB_START_BLOCK === 'bigint' ? v.JOB_START_BLOCK : undefined,
    log: log.child({ component: 'approval-policy' }),
  });
  log.info(
    { limits: { ...limits, minPaymentWei: `${limits.minPaymentWei}` } },
    'auto-approving service requests within limits',
  );
  cleanup.push(() => approver.stop());
}
