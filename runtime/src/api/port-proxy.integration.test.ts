// The port proxy on the real SandboxManager and Docker engine: a sandbox created with
// exposedPorts [3000, 3001] serves a python http.server through GET …/port/3000/ and a Node app
// (gzip body, WebSocket echo) on 3001; an unexposed port is 404, another owner 403, path tricks
// stay on the sandbox port, and the mapping is read from the live container across stop → resume.
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import pino from 'pino';
import { Registry } from 'prom-client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionAuth } from '../auth/index.ts';
import { isRuntimeError } from '../errors.ts';
import { makeRig, sidecarExec, type TestRig } from '../sandbox/testing/rig.ts';
import { createOperatorApi } from './app.ts';
import type { ApiSandboxes } from './deps.ts';
import { type OperatorApiServer, serveOperatorApi } from './serve.ts';
import { PROXY_APP_JS, wsRoundTrip } from './testing/proxy-apps.ts';
import { signInOverHttp } from './testing/sign-in.ts';

const image = inject('sandboxImage');
const SERVE = 'cd /home/agent && nohup python3 -m http.server 3000 >/dev/null 2>&1 &';
const SERVE_APP = `echo ${Buffer.from(PROXY_APP_JS).toString('base64')} | base64 -d > /tmp/proxy-app.cjs && (nohup node /tmp/proxy-app.cjs 3001 >/dev/null 2>&1 &)`;

describe('port proxy on real sandboxes', () => {
  let rig: TestRig;
  let server: OperatorApiServer;
  let id: string;
  const owner = privateKeyToAccount(generatePrivateKey());
  const other = privateKeyToAccount(generatePrivateKey());
  const tokens = new Map<string, string>();

  const signIn = (account: typeof owner) => signInOverHttp(server.url, account);
  const get = (path: string, who = owner.address) =>
    fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${tokens.get(who)}` } });

  /** Starts the server as the agent user and waits until it answers through the proxy. */
  const serveAndWait = async () => {
    const r = await sidecarExec(rig.manager.sidecarEndpoint(id), SERVE);
    expect(r.exitCode).toBe(0);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const res = await get(`/api/sandboxes/${id}/port/3000/`);
      if (res.status === 200) return res;
      await res.text();
      if (Date.now() > deadline) throw new Error(`port 3000 never answered (last ${res.status})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  beforeAll(async () => {
    rig = await makeRig(image);
    const sessions = await SessionAuth.create({
      secret: rig.secret,
      store: rig.store,
      siwe: { publicUrl: () => server.url, chainId: 31337 },
    });
    const sandboxes: ApiSandboxes = rig.manager; // the real manager satisfies the API's interface
    const api = createOperatorApi({
      sessions,
      sandboxes,
      store: rig.store,
      metrics: new Registry(),
      logger: pino({ level: 'silent' }),
      mode: 'cloud',
      capabilities: {},
    });
    server = await serveOperatorApi(api, { port: 0 });
    const rec = await rig.manager.create({
      owner: owner.address,
      serviceId: 1,
      callId: 'port-proxy-int-1',
      exposedPorts: [3000, 3001],
    });
    id = rec.id;
    await sidecarExec(rig.manager.sidecarEndpoint(id), 'echo proxied > /home/agent/hello.txt');
    tokens.set(owner.address, await signIn(owner));
    tokens.set(other.address, await signIn(other));
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await rig?.cleanup();
  });

  it('publishes the exposed port on 127.0.0.1 only and records its host port', async () => {
    const rec = rig.manager.get(id);
    const info = await rig.manager.driver.docker.getContainer(rec.containerId!).inspect();
    const bindings = info.NetworkSettings.Ports['3000/tcp'] ?? [];
    expect(bindings.length).toBeGreaterThan(0);
    expect(bindings.every((b) => b.HostIp === '127.0.0.1')).toBe(true);
    expect(await rig.manager.exposedPort(id, 3000)).toEqual({
      host: '127.0.0.1',
      port: Number(bindings[0]!.HostPort),
    });
    expect(rec.exposedHostPorts?.['3000']).toBe(Number(bindings[0]!.HostPort));
    // The sandbox view lists the exposed ports.
    const view = (await (await get(`/api/sandboxes/${id}`)).json()) as { ports: unknown };
    expect(view.ports).toEqual({ '3000': { proxy: 'port/3000/' }, '3001': { proxy: 'port/3001/' } });
  });

  it("reaches the container's port 3000: the directory listing, as text/html", async () => {
    const res = await serveAndWait();
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('hello.txt');
    const file = await get(`/api/sandboxes/${id}/port/3000/hello.txt`);
    expect(file.status).toBe(200);
    expect(await file.text()).toBe('proxied\n');
  }, 60_000);

  it('answers 404 for a port the sandbox does not expose (the sidecar port included)', async () => {
    for (const port of [3002, 8080]) {
      const res = await get(`/api/sandboxes/${id}/port/${port}/`);
      expect(res.status).toBe(404);
      await res.text();
    }
    await expect(rig.manager.exposedPort(id, 3002)).rejects.toThrow(/does not expose port 3002/);
  });

  it('refuses another owner with 403', async () => {
    const res = await get(`/api/sandboxes/${id}/port/3000/`, other.address);
    expect(res.status).toBe(403);
    await res.text();
  });

  /** A raw request through the operator: no decompression, no path normalisation. */
  const raw = (path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((res, rej) => {
      const req = request(`${server.url}${path}`, {
        headers: { authorization: `Bearer ${tokens.get(owner.address)}`, ...headers },
      });
      req.on('error', rej);
      req.on('response', async (r) => {
        const chunks: Buffer[] = [];
        for await (const c of r) chunks.push(c as Buffer);
        res({ status: r.statusCode ?? 0, headers: r.headers, body: Buffer.concat(chunks) });
      });
      req.end();
    });

  it('a gzip-serving app and a WebSocket echo work through the proxy; path tricks stay put', async () => {
    expect((await sidecarExec(rig.manager.sidecarEndpoint(id), SERVE_APP)).exitCode).toBe(0);
    const deadline = Date.now() + 20_000;
    let gz = await raw(`/api/sandboxes/${id}/port/3001/gz`, { 'accept-encoding': 'gzip' });
    while (gz.status !== 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      gz = await raw(`/api/sandboxes/${id}/port/3001/gz`, { 'accept-encoding': 'gzip' });
    }
    expect(gz.status).toBe(200);
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).toString()).toBe('compressible '.repeat(200));

    const ws = await wsRoundTrip(
      `${server.url}/api/sandboxes/${id}/port/3001/ws`,
      { authorization: `Bearer ${tokens.get(owner.address)}` },
      'hot reload ping',
    );
    expect(ws.status).toBe(101);
    expect(ws.echo).toBe('hot reload ping');
    const strangerWs = await wsRoundTrip(
      `${server.url}/api/sandboxes/${id}/port/3001/ws`,
      { authorization: `Bearer ${tokens.get(other.address)}` },
      'x',
    );
    expect(strangerWs.status).toBe(403);

    for (const bad of ['%333001', '03001', '3001@127.0.0.1:8080', '0x0bb9']) {
      const r = await raw(`/api/sandboxes/${id}/port/${bad}/gz`);
      expect([400, 404], bad).toContain(r.status);
    }
    const twice = await raw(`/api/sandboxes/${id}/port/3001/port/8080/health`);
    expect(twice.body.toString()).toBe('app /port/8080/health'); // the app's path, not the sidecar
    const up = await raw(`/api/sandboxes/${id}/port/3001/../../port/8080/health`);
    expect(up.status).toBe(404); // resolved to …/port/8080, which the sandbox does not expose
  }, 60_000);

  it('drops the mapping on stop and refreshes it on resume', async () => {
    await rig.manager.stop(id);
    let err: unknown;
    try {
      await rig.manager.exposedPort(id, 3000);
    } catch (e) {
      err = e;
    }
    expect(isRuntimeError(err) && err.code).toBe('NOT_FOUND');
    const rec = await rig.manager.resume(id);
    const info = await rig.manager.driver.docker.getContainer(rec.containerId!).inspect();
    const host = Number(info.NetworkSettings.Ports['3000/tcp']?.[0]?.HostPort);
    expect((await rig.manager.exposedPort(id, 3000)).port).toBe(host);
    const res = await serveAndWait();
    expect(await res.text()).toContain('hello.txt');
  }, 90_000);
});
