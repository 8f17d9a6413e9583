// The API's sidecar clients and their shared circuit breaker across a sandbox's restarts: failures
// of the container that died do not count against the one the runtime started in its place, while
// a sidecar that keeps failing in the same running interval stays behind the open breaker.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isRuntimeError } from '../errors.ts';
import { createApiSidecars } from './sidecars.ts';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A sidecar answering exec on `port` (0: any free port); resolves its URL. */
async function sidecar(port = 0): Promise<string> {
  const s = createServer((req, res) => {
    req.resume();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ result: { exitCode: 0, stdout: 'ok\n', stderr: '' } }));
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(port, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

/** A loopback port nothing listens on (a dead container's published port). */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

const code = (e: unknown) => (isRuntimeError(e) ? e.code : String(e));

describe('createApiSidecars: the breaker across a restart', () => {
  const opts = { breaker: { failureThreshold: 3, cooldownMs: 60_000 } };
  let ep = { url: '', token: 't', startedAt: 1 };
  const exec = async (sidecars: ReturnType<typeof createApiSidecars>) =>
    (await sidecars.client('sbx-1')).exec({ command: 'true' }).then(
      (r) => r.stdout,
      (e: unknown) => code(e),
    );
  // The user retries while the dead container is still the sandbox's endpoint: the breaker opens.
  async function openOn(sidecars: ReturnType<typeof createApiSidecars>) {
    for (let i = 0; i < 3; i++) expect(await exec(sidecars)).toBe('SIDECAR_ERROR');
    expect(await exec(sidecars)).toBe('CIRCUIT_OPEN');
  }

  it('restarted at a new port: the first call reaches the new container', async () => {
    ep = { url: `http://127.0.0.1:${await deadPort()}`, token: 't', startedAt: 1 };
    const sidecars = createApiSidecars({ sidecarEndpoint: () => ep }, opts);
    await openOn(sidecars);
    ep = { url: await sidecar(), token: 't', startedAt: 2 };
    expect(await exec(sidecars)).toBe('ok\n');
  });

  it('restarted at the same address (a socket, or the engine gave the port back): the first call reaches it', async () => {
    const port = await deadPort();
    ep = { url: `http://127.0.0.1:${port}`, token: 't', startedAt: 1 };
    const sidecars = createApiSidecars({ sidecarEndpoint: () => ep }, opts);
    await openOn(sidecars);
    await sidecar(port);
    ep = { ...ep, startedAt: 2 };
    expect(await exec(sidecars)).toBe('ok\n');
  });

  it('the same running interval: a sidecar that failed stays behind the open breaker until its probe', async () => {
    const port = await deadPort();
    ep = { url: `http://127.0.0.1:${port}`, token: 't', startedAt: 1 };
    const sidecars = createApiSidecars({ sidecarEndpoint: () => ep }, opts);
    await openOn(sidecars);
    await sidecar(port);
    expect(await exec(sidecars)).toBe('CIRCUIT_OPEN');
  });
});
