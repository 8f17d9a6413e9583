// Where the host reaches a container port a sandbox exposed: read from the live container,
// checked to be this sandbox's container by id and running, never from a stored port (the engine
// may since have handed it to another container).
import type { DockerDriver } from '../docker/driver.ts';
import { RuntimeError } from '../errors.ts';
import { mustGet, type SandboxContext } from './context.ts';

const NO_NETWORK_PORTS =
  'this sandbox has no network: SANDBOX_EGRESS=none; its ports cannot be reached (use exec or files instead)';

/** NOT_FOUND when the sandbox does not expose the port or is not running. */
export async function exposedPort(
  ctx: SandboxContext,
  id: string,
  containerPort: number,
): Promise<{ host: '127.0.0.1'; port: number }> {
  const r = mustGet(ctx, id);
  if (ctx.cfg.egress === 'none' || r.sidecarUrl?.startsWith('unix:')) {
    throw new RuntimeError('CONFLICT', NO_NETWORK_PORTS);
  }
  const notFound = (why = '') =>
    new RuntimeError('NOT_FOUND', `sandbox ${id} does not expose port ${containerPort}${why}`);
  if (!(r.exposedPorts ?? []).includes(containerPort)) throw notFound();
  if (r.state !== 'running' || !r.containerId) throw notFound(` (it is ${r.state})`);
  let info: Awaited<ReturnType<ReturnType<DockerDriver['docker']['getContainer']>['inspect']>>;
  try {
    info = await ctx.driver.docker.getContainer(r.containerId).inspect();
  } catch (cause) {
    throw new RuntimeError('SANDBOX_NOT_RUNNING', `sandbox ${id} has no running container`, { cause });
  }
  const sameContainer = r.containerId.length >= 12 && info.Id.startsWith(r.containerId);
  if (!sameContainer || info.State?.Running !== true) {
    throw new RuntimeError('SANDBOX_NOT_RUNNING', `sandbox ${id} has no running container`);
  }
  const binding = info.NetworkSettings?.Ports?.[`${containerPort}/tcp`]?.find(
    (b) => b.HostIp === '127.0.0.1',
  );
  const port = Number(binding?.HostPort);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw notFound(' (no loopback binding)');
  return { host: '127.0.0.1', port };
}
