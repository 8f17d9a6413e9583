// SANDBOX_EGRESS=none on the real engine: the sandbox has no interface but loopback (Docker's
// `none` network), so nothing inside can send a packet anywhere; the operator still reaches its
// sidecar, over a Unix socket in a root-only per-sandbox directory, for everything: exec, a
// streamed agent run, a terminal, files, secrets, stop/resume; exposed ports are refused; the
// socket directory goes with the sandbox; the agent user can neither reach nor replace the socket.
import { existsSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import pino from 'pino';
import { Registry } from 'prom-client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createOperatorApi } from '../api/app.ts';
import { type OperatorApiServer, serveOperatorApi } from '../api/serve.ts';
import { signInOverHttp } from '../api/testing/sign-in.ts';
import { readSse } from '../api/testing/sse-reader.ts';
import { SessionAuth } from '../auth/index.ts';
import { socketDir } from '../docker/sidecar-socket.ts';
import { isRuntimeError } from '../errors.ts';
import { SidecarClient } from '../sidecar-client/index.ts';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 120_000 });

const image = inject('sandboxImage');
const AGENT = 'for i in 1 2 3; do echo "step $i"; sleep 0.2; done; echo "reply: $SIDECAR_AGENT_MESSAGE"';
const SECRET = 'sk-none-7c1d2e3f4a5b6c7d8e9f';
let rig: TestRig;
let server: OperatorApiServer;
let token: string;
let id: string;
const account = privateKeyToAccount(generatePrivateKey());
const SOCKET_ROOT = `/run/asbx-test-${process.pid}`;

const call = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
};
const exec = async (command: string) =>
  (await call('POST', `/api/sandboxes/${id}/exec`, { command })).json as {
    exit_code: number;
    stdout: string;
    stderr: string;
  };

beforeAll(async () => {
  rig = await makeRig(image, { egress: 'none', sidecarSocketDir: SOCKET_ROOT });
  let listenUrl = '';
  const sessions = await SessionAuth.create({
    secret: rig.secret,
    store: rig.store,
    siwe: { publicUrl: () => listenUrl, chainId: 31337 },
  });
  const api = createOperatorApi({
    sessions,
    sandboxes: rig.manager,
    store: rig.store,
    metrics: new Registry(),
    logger: pino({ level: 'silent' }),
    mode: 'cloud',
    capabilities: {},
  });
  server = await serveOperatorApi(api, { port: 0 });
  listenUrl = server.url;
  const rec = await rig.manager.create({
    owner: account.address,
    serviceId: 1,
    callId: 'none-1',
    env: { SANDBOX_AGENT_COMMAND: AGENT },
  });
  id = rec.id;
  token = await signInOverHttp(server.url, account);
});

afterAll(async () => {
  await server?.close();
  await rig?.cleanup();
  await rm(SOCKET_ROOT, { recursive: true, force: true });
});

describe('SANDBOX_EGRESS=none: no interface but loopback', () => {
  it("the container is on Docker's none network and sees only lo; nothing leaves it", async () => {
    const info = await rig.manager.driver.docker.getContainer(rig.manager.get(id).containerId!).inspect();
    expect(info.HostConfig.NetworkMode).toBe('none');
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual(['none']);
    expect(Object.values(info.NetworkSettings.Ports ?? {}).filter(Boolean)).toEqual([]);
    expect((await exec('ls /sys/class/net')).stdout.split(/\s+/).filter(Boolean)).toEqual(['lo']);
    const ipLink = await exec(
      'command -v ip >/dev/null && ip -o link | cut -d: -f2 | tr -d " " || ls /sys/class/net',
    );
    expect(ipLink.stdout.trim()).toBe('lo');
    // No route at all: connects fail at once, whatever the address.
    for (const [host, port] of [
      ['1.1.1.1', 53],
      ['169.254.169.254', 80],
      ['172.17.0.1', 2375],
    ] as const) {
      const js = `require('net').connect({host:'${host}',port:${port}}).on('connect',()=>console.log('open')).on('error',e=>console.log(e.code))`;
      expect((await exec(`node -e "${js}"`)).stdout.trim()).toBe('ENETUNREACH');
    }
    expect(rig.manager.network.name).toBe('none');
    expect(rig.manager.get(id).hostPort).toBeNull();
  });

  it('the socket lives in a 0700 root directory the agent user can neither enter nor change', async () => {
    const dir = socketDir(SOCKET_ROOT, id);
    const st = statSync(dir);
    expect(st.mode & 0o777).toBe(0o700);
    expect(st.uid).toBe(0);
    expect(statSync(`${dir}/sidecar.sock`).isSocket()).toBe(true);
    const r = await exec(
      'whoami; ls /run/sidecar 2>&1; rm -f /run/sidecar/sidecar.sock 2>&1; mv /run/sidecar /run/x 2>&1; echo done',
    );
    expect(r.stdout).toMatch(/^agent\n/);
    expect(r.stdout).toMatch(/ls: cannot open directory '\/run\/sidecar': Permission denied/);
    expect(r.stdout).toMatch(/rm: cannot remove '\/run\/sidecar\/sidecar.sock': Permission denied/);
    expect(r.stdout).toMatch(
      /mv: cannot move .*(Permission denied|Read-only file system|Device or resource busy)/,
    );
    expect(statSync(`${dir}/sidecar.sock`).isSocket()).toBe(true);
    expect((await exec('echo still-here')).stdout).toBe('still-here\n');
  });

  it('a prompt run streams to completion over the socket', async () => {
    const p = await call('POST', `/api/sandboxes/${id}/prompt`, { message: 'hello none' });
    expect(p.status).toBe(202);
    const url = `${server.url}/api/sandboxes/${id}/runs/${p.json.run_id}/events`;
    const { events } = await readSse(url, { token, timeoutMs: 30_000 });
    expect(events.at(-1)!.event).toBe('run.completed');
    const run = await call('GET', `/api/sandboxes/${id}/runs/${p.json.run_id}`);
    expect(run.json.final_text).toContain('reply: hello none');
  });

  it('a terminal streams its output', async () => {
    const t = await call('POST', `/api/sandboxes/${id}/terminals`, { cols: 80, rows: 24 });
    expect(t.status).toBe(200);
    const tid = t.json.sessionId ?? t.json.data.sessionId;
    const res = await fetch(`${server.url}/api/sandboxes/${id}/terminals/${tid}/stream`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const reader = res.body!.getReader();
    await call('POST', `/api/sandboxes/${id}/terminals/${tid}/input`, { data: 'echo term-$((40+2))\n' });
    let text = '';
    const deadline = Date.now() + 15_000;
    while (!text.includes('term-42') && Date.now() < deadline) {
      text += new TextDecoder().decode((await reader.read()).value);
    }
    expect(text).toContain('term-42');
    await reader.cancel();
    expect((await call('DELETE', `/api/sandboxes/${id}/terminals/${tid}`)).status).toBe(200);
  });

  it('files upload and download through the sidecar client over the socket, and health answers', async () => {
    const ep = rig.manager.sidecarEndpoint(id);
    expect(ep.socketPath).toBe(`${socketDir(SOCKET_ROOT, id)}/sidecar.sock`);
    const client = new SidecarClient({
      sandboxId: id,
      baseUrl: ep.url,
      token: ep.token,
      socketPath: ep.socketPath!,
    });
    const bytes = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 256));
    await client.writeFile('/home/agent/blob.bin', bytes.toString('base64'), { encoding: 'base64' });
    const back = await client.readFile('/home/agent/blob.bin', { encoding: 'base64' });
    expect(Buffer.from(back.content, 'base64').equals(bytes)).toBe(true);
    expect((await client.health()).status).toBe('ok');
  });

  it('secrets reach exec, and survive stop → resume (socket re-created, workspace kept)', async () => {
    expect((await call('POST', `/api/sandboxes/${id}/secrets`, { env: { MY_SECRET: SECRET } })).status).toBe(
      200,
    );
    expect((await exec('printf %s "$MY_SECRET"')).stdout).toBe(SECRET);
    const before = rig.manager.get(id).containerId;
    expect((await call('POST', `/api/sandboxes/${id}/stop`)).json.state).toBe('stopped');
    expect((await call('POST', `/api/sandboxes/${id}/exec`, { command: 'true' })).status).toBe(409);
    expect((await call('POST', `/api/sandboxes/${id}/resume`)).json.state).toBe('running');
    expect(rig.manager.get(id).containerId).toBe(before);
    expect((await exec('printf %s "$MY_SECRET"; ls /sys/class/net')).stdout).toBe(`${SECRET}lo\n`);
    expect((await exec('cat /home/agent/blob.bin | wc -c')).stdout.trim()).toBe('4096');
  });

  it('exposed ports are refused at create, and the port proxy says the sandbox has no network', async () => {
    const err = await rig.manager
      .create({ owner: account.address, serviceId: 1, callId: 'none-ports', exposedPorts: [3000] })
      .catch((e: unknown) => e);
    expect(isRuntimeError(err) && err.code).toBe('VALIDATION');
    expect((err as Error).message).toMatch(/no network \(SANDBOX_EGRESS=none\).*port 3000/);
    const proxied = await call('GET', `/api/sandboxes/${id}/port/3000/`);
    expect(proxied.status).toBe(409);
    expect(proxied.json.error.message).toMatch(/this sandbox has no network: SANDBOX_EGRESS=none/);
  });

  it('a policy switch recreates a stopped sandbox on the other network: none → public gets a port, public → none a socket', async () => {
    const rec = await rig.manager.create({ owner: account.address, serviceId: 1, callId: 'none-switch' });
    await rig.manager.stop(rec.id);
    try {
      rig.config.egress = 'public';
      await rig.reopen();
      const pub = await rig.manager.resume(rec.id);
      expect(pub.hostPort).toBeGreaterThan(0);
      expect(rig.manager.sidecarEndpoint(rec.id).socketPath).toBeUndefined();
      expect((await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'ls /sys/class/net')).stdout).toMatch(
        /eth0/,
      );
      await rig.manager.stop(rec.id);
    } finally {
      rig.config.egress = 'none';
      await rig.reopen();
    }
    const back = await rig.manager.resume(rec.id);
    expect(back.hostPort).toBeNull();
    const info = await rig.manager.driver.docker.getContainer(back.containerId!).inspect();
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual(['none']);
    expect((await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'ls /sys/class/net')).stdout).toBe('lo\n');
    await rig.manager.delete(rec.id);
  });

  it('a stopped sandbox resumed after SANDBOX_SOCKET_DIR moved is recreated on the new directory', async () => {
    const rec = await rig.manager.create({ owner: account.address, serviceId: 1, callId: 'none-moved' });
    await rig.manager.stop(rec.id);
    const moved = `${SOCKET_ROOT}-m`;
    rig.config.sidecarSocketDir = moved;
    try {
      await rig.reopen();
      const back = await rig.manager.resume(rec.id);
      expect(back.containerId).not.toBe(rec.containerId);
      expect(rig.manager.sidecarEndpoint(rec.id).socketPath).toBe(`${socketDir(moved, rec.id)}/sidecar.sock`);
      expect((await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'echo moved')).stdout).toBe('moved\n');
      await rig.manager.delete(rec.id);
      expect(existsSync(socketDir(moved, rec.id))).toBe(false);
    } finally {
      rig.config.sidecarSocketDir = SOCKET_ROOT;
      await rig.reopen();
      await rm(moved, { recursive: true, force: true });
    }
  });

  it('GC to warm removes the socket directory with the container; a resume from warm makes both again', async () => {
    const rec = await rig.manager.create({ owner: account.address, serviceId: 1, callId: 'none-gc' });
    await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'echo kept > /home/agent/k.txt');
    await rig.manager.stop(rec.id);
    rig.clock.now += 2 * 86_400_000;
    await rig.manager.gcTick();
    expect(rig.manager.get(rec.id).tier).toBe('warm');
    expect(existsSync(socketDir(SOCKET_ROOT, rec.id))).toBe(false);
    await rig.manager.resume(rec.id);
    expect(statSync(socketDir(SOCKET_ROOT, rec.id)).mode & 0o777).toBe(0o700);
    expect((await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'cat /home/agent/k.txt')).stdout).toBe(
      'kept\n',
    );
    await rig.manager.delete(rec.id);
  });

  it('delete removes the socket directory', async () => {
    const dir = socketDir(SOCKET_ROOT, id);
    expect(existsSync(dir)).toBe(true);
    await rig.manager.delete(id);
    expect(existsSync(dir)).toBe(false);
    // The direct sidecar path is gone too: nothing to reach.
    await expect(
      sidecarExec({ url: 'http://localhost', token: 'x', socketPath: `${dir}/sidecar.sock` }, 'true'),
    ).rejects.toThrow();
  });
});
