// The seam between the runtime and the chain-facing operator: the runtime's SandboxManager as the
// operator API wants it, as the job handlers want it, and where a workflow runs. blueprint-bin
// only wires these; nothing else translates between the two.
import type { ApiSandboxes, SandboxManager, WorkflowRecord } from '@agent-sandbox/runtime';
import type { SandboxRuntime } from './deps.ts';
import type { HandledCalls } from './handled-calls.ts';
import type { InstanceRuntime } from './instance-supervisor.ts';

/**
 * The runtime manager as the API wants it: get → undefined when unknown, failed creates visible,
 * provisions looked up by their key (this service + call id: one read, never a scan).
 */
export function apiSandboxes(
  manager: SandboxManager,
  handled: HandledCalls,
  serviceId: bigint,
): ApiSandboxes {
  return {
    get: (id) => {
      try {
        return manager.get(id);
      } catch {
        return undefined;
      }
    },
    list: (f) => manager.list(f),
    stop: (id) => manager.stop(id),
    resume: (id) => manager.resume(id),
    snapshot: (id) => manager.snapshot(id),
    injectSecrets: (id, env) => manager.injectSecrets(id, env),
    wipeSecrets: (id) => manager.wipeSecrets(id),
    addMember: (id, address) => manager.addMember(id, address),
    removeMember: (id, address) => manager.removeMember(id, address),
    addSshKey: (id, key) => manager.addSshKey(id, key),
    removeSshKey: (id, which) => manager.removeSshKey(id, which),
    touch: (id) => manager.touch(id),
    sidecarEndpoint: (id) => manager.sidecarEndpoint(id),
    // Throws NOT_FOUND for a port the sandbox does not expose: the proxy answers 404.
    exposedPort: (id, port) => manager.exposedPort(id, port),
    async getProvision(callId) {
      try {
        return await manager.getProvision(callId, serviceId);
      } catch {
        // A create refused before the runtime saw it (validation): its reason is in the handled record.
        const h = await handled.failedCreate(serviceId, callId);
        if (!h) return undefined;
        const json = JSON.parse(h.value?.['json'] ?? '{}') as { error?: string; phase?: string };
        return {
          callId,
          sandboxId: '',
          phase: 'failed',
          failedPhase: json.phase ?? 'validation',
          error: json.error ?? h.reason ?? null,
        };
      }
    },
  };
}

/** The manager for job handlers, its delete also deleting the sandbox's runs (logged, never thrown). */
export function jobSandboxes(
  manager: SandboxManager,
  forgetRuns: (sandboxId: string) => Promise<unknown>,
): SandboxRuntime {
  return {
    create: (params, hooks) => manager.create(params, hooks),
    get: (id) => manager.get(id),
    getProvision: (callId, serviceId) => manager.getProvision(callId, serviceId),
    sidecarEndpoint: (id) => manager.sidecarEndpoint(id),
    delete: deleteForgettingRuns(manager, forgetRuns),
    forgetProvision: (serviceId, callId) => manager.forgetProvision(serviceId, callId),
    async withdrawProvision(serviceId, callId, reason) {
      const r = await manager.withdrawProvision(serviceId, callId, reason);
      if (r?.deleted) await forgetRuns(r.sandboxId).catch(() => {});
      return r;
    },
  };
}

/** The manager's delete, then the sandbox's runs forgotten (best effort: the sandbox is gone). */
function deleteForgettingRuns(manager: SandboxManager, forgetRuns: (sandboxId: string) => Promise<unknown>) {
  return async (id: string) => {
    const r = await manager.delete(id);
    await forgetRuns(id).catch(() => {});
    return r;
  };
}

/** The manager for the instance keeper: its delete also deletes the sandbox's runs. */
export function instanceRuntime(
  manager: SandboxManager,
  forgetRuns: (sandboxId: string) => Promise<unknown>,
): InstanceRuntime {
  return {
    create: (params) => manager.create(params),
    list: (filter) => manager.list(filter),
    restartIfEngineStopped: (id) => manager.restartIfEngineStopped(id),
    delete: deleteForgettingRuns(manager, forgetRuns),
  };
}

/**
 * The sandbox a workflow runs in: its target sandbox (cloud), or the service's instance sandbox
 * (target kind 1). The one place instance targets are resolved; `instanceSandbox` is the operator's
 * instance sandbox (undefined in cloud mode or before it is provisioned).
 */
export function workflowSandbox(
  instanceSandbox: () => string | undefined,
): (w: Pick<WorkflowRecord, 'targetKind' | 'targetSandboxId'>) => string | undefined {
  return (w) => (w.targetKind === 1 ? instanceSandbox() : w.targetSandboxId || undefined);
}
