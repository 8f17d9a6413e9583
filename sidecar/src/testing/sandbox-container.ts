// Test support: runs one real sandbox container from the built image, published on a random loopback port.
import { randomBytes } from 'node:crypto';
import { get as httpGet } from 'node:http';
import Docker from 'dockerode';

export interface SandboxContainer {
  container: Docker.Container;
  url: string;
  token: string;
  remove(): Promise<void>;
}

export async function startSandboxContainer(
  image: string,
  opts: {
    env?: Record<string, string>;
    labels?: Record<string, string>;
    docker?: Docker;
    /** Host paths mounted in, `host:container` (e.g. a fake /var/run/dstack.sock). */
    binds?: string[];
  } = {},
): Promise<SandboxContainer> {
  const docker = opts.docker ?? new Docker();
  const token = randomBytes(32).toString('hex');
  const env = { ...opts.env, SIDECAR_AUTH_TOKEN: token };
  const container = await docker.createContainer({
    Image: image,
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    Labels: { 'agent-sandbox.test': '1', ...opts.labels },
    ExposedPorts: { '8080/tcp': {} },
    HostConfig: {
      PortBindings: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] },
      ...(opts.binds ? { Binds: opts.binds } : {}),
    },
  });
  const remove = () => container.remove({ force: true }).catch(() => {});
  try {
    await container.start();
    const info = await container.inspect();
    const port = info.NetworkSettings.Ports['8080/tcp']?.[0]?.HostPort;
    if (!port) throw new Error('the sandbox container published no port for 8080');
    const url = `http://127.0.0.1:${port}`;
    await waitHealthy(url, 20_000);
    return { container, url, token, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}

/**
 * One GET /health with node:http. Not fetch: while the container starts, docker-proxy accepts and
 * then resets the connection, and Node 20's fetch can leave that promise pending forever.
 */
export function probeHealth(url: string, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpGet(`${url}/health`, { timeout: timeoutMs, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
      res.on('error', () => resolve(false));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

export async function waitHealthy(url: string, timeoutMs: number, pollMs = 10): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await probeHealth(url)) return;
    if (Date.now() > end) throw new Error(`sidecar at ${url} not healthy after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
