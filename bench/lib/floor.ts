// The container floor the benches compare a create with: `docker run -d` of the same sandbox
// container (same caps, limits, volume, loopback port, sidecar env), then GET /health until it
// answers; the time of both, and the container removed after.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { SIDECAR_CAPS } from '../../runtime/src/docker/container-spec.ts';
import { probeHealth } from '../../runtime/src/docker/health.ts';
import { freePort } from './operators.ts';

const exec = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FloorShape {
  /** Container name prefix (the run id) and the labels that let the run remove what it made. */
  run: string;
  labels: string[];
  runLabel: string;
  cpu: number;
  memoryMb: number;
  /** A bridge network to run on instead of the engine's default bridge (a run's own). */
  network?: string;
  /** How long /health may take to answer (120 s unless told: a burst of 100 starts takes longer). */
  healthTimeoutMs?: number;
}

/** One floor: docker run -> /health answers, in ms. */
export async function floorOnce(image: string, i: number, s: FloorShape): Promise<number> {
  const f = await floorStart(image, i, s);
  await f.remove();
  return f.ms;
}

/**
 * One floor container started and answering /health: how long that took, when it answered
 * (performance.now(), for a burst's "all answered" time, which must not include the removals),
 * and its removal.
 */
export async function floorStart(
  image: string,
  i: number,
  s: FloorShape,
): Promise<{ ms: number; healthyAt: number; remove: () => Promise<void> }> {
  const port = await freePort();
  const name = `${s.run}-floor-${i}`;
  const t0 = performance.now();
  await exec('docker', [
    'run',
    '-d',
    '--name',
    name,
    ...s.labels.flatMap((l) => ['--label', l]),
    '--cap-drop',
    'ALL',
    ...SIDECAR_CAPS.flatMap((c) => ['--cap-add', c]),
    '--security-opt',
    'no-new-privileges:true',
    '--tmpfs',
    '/tmp:rw,nosuid,nodev,size=256m',
    '--cpus',
    `${s.cpu}`,
    '--memory',
    `${s.memoryMb}m`,
    '--mount',
    `type=volume,source=${name},target=/home/agent,volume-label=${s.runLabel}`,
    ...(s.network ? ['--network', s.network] : []),
    '-p',
    `127.0.0.1:${port}:8080`,
    '-e',
    'SIDECAR_PORT=8080',
    '-e',
    `SIDECAR_AUTH_TOKEN=${randomBytes(32).toString('hex')}`,
    '-e',
    'AGENT_WORKSPACE_ROOT=/home/agent',
    '-e',
    'AGENT_SUBPROCESS_UID=1000',
    '-e',
    'AGENT_SUBPROCESS_GID=1000',
    image,
  ]);
  const deadline = Date.now() + (s.healthTimeoutMs ?? 120_000);
  while (!(await probeHealth({ host: '127.0.0.1', port }, 1000))) {
    if (Date.now() > deadline) throw new Error(`floor container ${name} never answered /health`);
    await sleep(10);
  }
  const healthyAt = performance.now();
  const remove = async () => {
    await exec('docker', ['rm', '-f', '-v', name]);
    await exec('docker', ['volume', 'rm', '-f', name]).catch(() => {});
  };
  return { ms: healthyAt - t0, healthyAt, remove };
}
