// How the operator reaches one sandbox's sidecar: a loopback port the engine published, or (for
// sandboxes without a network, SANDBOX_EGRESS=none) a Unix socket in a per-sandbox directory.
// The record's sidecarUrl says which: `http://127.0.0.1:<port>` or `unix:<socket path>`.
import type { SidecarAddress } from '../docker/health.ts';
import { prepareSocketDir, SOCKET_IN_CONTAINER, socketPath } from '../docker/sidecar-socket.ts';
import type { SandboxContext } from './context.ts';
import { AGENT_UID, containerEnv } from './env.ts';
import type { SandboxRecord } from './record.ts';

const UNIX = 'unix:';

/** Whether sandboxes of this operator get no network (their sidecar listens on a socket). */
export function noNetwork(ctx: SandboxContext): boolean {
  return ctx.network.name === 'none';
}

/** The container env for a start of `rec` under the current policy (platform variables only). */
export function sandboxContainerEnv(
  ctx: SandboxContext,
  rec: Pick<SandboxRecord, 'token'>,
): Record<string, string> {
  return containerEnv({
    token: rec.token,
    sidecarPort: ctx.cfg.sidecarPort,
    ...(noNetwork(ctx) ? { socketPath: SOCKET_IN_CONTAINER } : {}),
  });
}

/** Makes (or re-checks) the socket directory a start needs; undefined when the sandbox has a network. */
export async function prepareSidecarSocket(ctx: SandboxContext, id: string): Promise<string | undefined> {
  return noNetwork(ctx) ? prepareSocketDir(ctx.cfg.sidecarSocketDir, id, Number(AGENT_UID)) : undefined;
}

/** Where the host reaches the sidecar just started, and the sidecarUrl to record for it. */
export function startedAddress(
  ctx: SandboxContext,
  id: string,
  hostPort: number,
): { addr: SidecarAddress; sidecarUrl: string; hostPort: number | null } {
  if (noNetwork(ctx)) {
    const path = socketPath(ctx.cfg.sidecarSocketDir, id);
    return { addr: { socketPath: path }, sidecarUrl: `${UNIX}${path}`, hostPort: null };
  }
  return {
    addr: { host: '127.0.0.1', port: hostPort },
    sidecarUrl: `http://${ctx.cfg.publicHost}:${hostPort}`,
    hostPort,
  };
}

/** The client endpoint for a recorded sidecarUrl: HTTP over the socket, or the loopback URL. */
export function endpointOf(
  sidecarUrl: string,
  token: string,
): { url: string; token: string; socketPath?: string } {
  if (sidecarUrl.startsWith(UNIX)) {
    return { url: 'http://localhost', token, socketPath: sidecarUrl.slice(UNIX.length) };
  }
  return { url: sidecarUrl, token };
}
