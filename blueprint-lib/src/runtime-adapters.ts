// The seam between the runtime and the chain-facing operator: the runtime's SandboxManager as the
// operator API wants it, as the job handlers want it, and the workflow exec over the API's
// sidecar clients. blueprint-bin only wires these; nothing else translates between the two.
import type { ApiSandboxes, ApiSidecars, SandboxManager } from '@agent-sandbox/runtime';
import type { BlueprintDeps, SandboxRuntime } from './deps.ts';
import type { HandledCalls } from './handled-calls.ts';

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
    async delete(id) {
      const r = await manager.delete(id);
      await forgetRuns(id).catch(() => {});
      return r;
    },
  };
}

/** A workflow's command run through the API's sidecar clients (same breaker); counts as activity. */
export function sidecarExec(
  sidecars: ApiSidecars,
  manager: Pick<SandboxManager, 'touch'>,
): NonNullable<BlueprintDeps['exec']> {
  return async (id, c) => {
    const r = await (await sidecars.client(id)).exec({
      command: c.command,
      ...(c.cwd ? { cwd: c.cwd } : {}),
      ...(c.timeoutMs ? { timeoutMs: c.timeoutMs } : {}),
    });
    await manager.touch(id).catch(() => {});
    return r;
  };
}
