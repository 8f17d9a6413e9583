// The default ApiSidecars: one SidecarClient per sandbox endpoint, all sharing one circuit breaker
// (keyed by sandbox id) and the API's per-operation timeouts. A sandbox that started again (the
// runtime restarted its dead container, or it was resumed) gets a closed breaker: the failures of
// the container that died say nothing about the one that replaced it.
import {
  CircuitBreaker,
  type CircuitBreakerOptions,
  SidecarClient,
  type SidecarTimeouts,
} from '../sidecar-client/index.ts';
import type { ApiSandboxes, ApiSidecarClient, ApiSidecars } from './deps.ts';

export function createApiSidecars(
  sandboxes: Pick<ApiSandboxes, 'sidecarEndpoint'>,
  opts: { timeouts?: Partial<SidecarTimeouts>; breaker?: CircuitBreaker | CircuitBreakerOptions } = {},
): ApiSidecars {
  const breaker = opts.breaker instanceof CircuitBreaker ? opts.breaker : new CircuitBreaker(opts.breaker);
  // Keyed by the endpoint and its running interval: a resumed or recreated container may listen on
  // another port, or on the same one (a socket path, a port the engine handed back).
  const clients = new Map<string, { key: string; startedAt: number | undefined; client: SidecarClient }>();
  return {
    async client(sandboxId: string): Promise<ApiSidecarClient> {
      const ep = await sandboxes.sidecarEndpoint(sandboxId);
      const key = `${ep.socketPath ?? ep.url}|${ep.token}|${ep.startedAt ?? ''}`;
      const cached = clients.get(sandboxId);
      if (cached?.key === key) return cached.client;
      if (cached && cached.startedAt !== ep.startedAt) breaker.reset(sandboxId);
      const client = new SidecarClient(
        {
          sandboxId,
          baseUrl: ep.url,
          token: ep.token,
          ...(ep.socketPath ? { socketPath: ep.socketPath } : {}),
        },
        { breaker, ...(opts.timeouts ? { timeouts: opts.timeouts } : {}) },
      );
      clients.set(sandboxId, { key, startedAt: ep.startedAt, client });
      return client;
    },
  };
}
