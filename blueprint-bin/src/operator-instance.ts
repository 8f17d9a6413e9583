// Instance modes: wires the instance keeper (blueprint-lib's InstanceSupervisor) to this
// operator's manager, chain and API. Its first pass runs before the operator is ready (a healthy
// instance is provisioned and reported by then); a failing one is retried in the background.
import {
  type BlueprintDeps,
  BlueprintWriter,
  InstanceSupervisor,
  instanceRuntime,
  type TeeInstance,
} from '@agent-sandbox/blueprint-lib';
import type { SandboxManager } from '@agent-sandbox/runtime';
import type { BlueprintEnvironment, OperatorKey } from '@agent-sandbox/sdk';
import type { Logger } from 'pino';
import type { Address } from 'viem';
import type { OperatorConfig } from './config.ts';
import { type Cleanup, step } from './operator-startup.ts';

export interface InstanceWiring {
  cfg: OperatorConfig;
  env: BlueprintEnvironment;
  key: OperatorKey;
  manager: SandboxManager;
  tee: TeeInstance | undefined;
  log: Logger;
  deps: BlueprintDeps;
  blueprint: Address;
  forgetRuns: (sandboxId: string) => Promise<unknown>;
}

export async function startInstanceKeeper(w: InstanceWiring, cleanup: Cleanup): Promise<InstanceSupervisor> {
  const v = w.cfg.values;
  const writer = new BlueprintWriter({
    httpRpcUrl: w.env.httpRpcUrl,
    blueprint: w.blueprint,
    account: w.key.account,
    logger: w.log,
  });
  const keeper = new InstanceSupervisor({
    mode: w.cfg.mode as 'instance' | 'tee-instance',
    httpRpcUrl: w.env.httpRpcUrl,
    tangle: w.env.tangleContract,
    blueprint: w.blueprint,
    serviceId: w.env.serviceId!,
    account: w.key.account,
    runtime: w.tee
      ? w.tee.instanceRuntime(instanceRuntime(w.manager, w.forgetRuns))
      : instanceRuntime(w.manager, w.forgetRuns),
    policy: w.deps.policy,
    operatorApiUrl: w.deps.operatorApiUrl,
    log: w.log.child({ component: 'instance' }),
    reportDeprovisioned: (id) => writer.reportDeprovisioned(id),
    checkIntervalMs: v.INSTANCE_CHECK_INTERVAL_MS!,
    maxBackoffMs: v.INSTANCE_RETRY_MAX_MS!,
    ...(w.tee ? { tee: w.tee.instance } : {}),
  });
  cleanup.push(() => keeper.stop());
  await step(w.log, 'provisioning the instance sandbox', () => keeper.start());
  const s = keeper.status();
  if (s.state === 'failed')
    w.log.error({ instance: s }, 'the instance sandbox is not ready; the operator starts and keeps retrying');
  return keeper;
}
