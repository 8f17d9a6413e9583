// Issue 29, what /health says about the Docker engine: reachable or not, lost since when, and how
// far the adoption of the sandboxes got once it is back — counts and times only, no sandbox id and
// no socket error on this public route. The runtime reaches the real engine through a Unix socket
// the test serves in front of it (the shared engine is never stopped): the socket goes away (the
// engine is lost) and comes back (the engine returns; the sandboxes' containers kept running, so
// adoption keeps them). The API is the real one over HTTP (harness), fed by the manager's status.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Harness, startHarness } from '../api/testing/harness.ts';
import { DockerDriver } from '../docker/driver.ts';
import { EncryptedStore } from '../store/store.ts';
import { SandboxManager } from './manager.ts';

const image = inject('sandboxImage');
const RUN = `rteh-${Date.now().toString(36)}`;
const OWNER = '0x000000000000000000000000000000000000dEaD';
let dir: string;
let sock: string;
let store: EncryptedStore;
let manager: SandboxManager;
let api: Harness;
let server: Server | undefined;
const open = new Set<Socket>();

/** The engine is there: the test's socket forwards to the real one. */
async function engineUp(): Promise<void> {
  server = createServer((c) => {
    const up = connect('/var/run/docker.sock');
    open.add(c).add(up);
    c.pipe(up).pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  });
  await new Promise<void>((res) => server!.listen(sock, res));
}

/** The engine is gone: the socket removed and every connection through it dropped. */
async function engineGone(): Promise<void> {
  await new Promise<void>((res) => {
    server!.close(() => res());
    for (const s of open) s.destroy();
    open.clear();
  });
}

/** Polls a condition on the manager's own state (no fixed sleeps): the watch pings every 500 ms. */
async function until(what: string, ok: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), `${RUN}-`));
  sock = join(dir, 'docker.sock');
  await engineUp();
  store = await EncryptedStore.open({ dir: join(dir, 'store'), secret: '9e'.repeat(32) });
  manager = await SandboxManager.open({
    store,
    driver: new DockerDriver(new Docker({ socketPath: sock })),
    config: {
      operatorId: RUN,
      image,
      snapshotDir: join(dir, 'snapshots'),
      extraLabels: { 'agent-sandbox.test': '1', 'agent-sandbox.test.suite': 'engine-health' },
    },
  });
  api = await startHarness({ deps: { engine: () => manager.engineStatus() } });
});

afterAll(async () => {
  if (!server?.listening) await engineUp().catch(() => {});
  for (const r of manager?.list() ?? []) await manager.delete(r.id).catch(() => {});
  await manager?.close().catch(() => {});
  await store?.close();
  await api?.close();
  server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('/health and the Docker engine', () => {
  it('says the engine is up, lost since when (503), and how far adoption got once it is back', async () => {
    const sandboxes = await Promise.all(
      ['a', 'b'].map((n) => manager.create({ owner: OWNER, serviceId: '1', callId: `eh-${n}` })),
    );
    const ok = await api.call('GET', '/health');
    expect(ok.status).toBe(200);
    expect(ok.json.engine).toEqual({ state: 'up', losses: 0 });

    const lostAt = Date.now();
    await engineGone();
    await until('the runtime noticed the engine is gone', () => manager.engineStatus().state === 'down');
    const down = await api.call('GET', '/health');
    expect(down.status).toBe(503);
    expect(down.json.status).toBe('degraded');
    expect(down.json.engine).toMatchObject({ state: 'down', losses: 1 });
    expect(down.json.engine.downSince).toBeGreaterThanOrEqual(lostAt - 1000);
    expect(down.json.engine.message).toMatch(/Docker engine unreachable since .*ENGINE_UNAVAILABLE/);
    // Nothing of a tenant, nothing of the host's socket.
    for (const s of sandboxes) expect(down.text).not.toContain(s.id);
    expect(down.text).not.toContain(sock);
    expect(down.text).not.toMatch(/ENOENT|ECONNREFUSED|docker\.sock/);
    // The operator's own status still has the cause (for its log).
    expect(manager.engineStatus().cause).toBeTruthy();

    await engineUp();
    await until('the engine is back and the sandboxes adopted', () => manager.engineStatus().state === 'up');
    const back = await api.call('GET', '/health');
    expect(back.status).toBe(200);
    expect(back.json.engine).toMatchObject({
      state: 'up',
      losses: 1,
      adoption: { total: 2, adopted: 2, failed: 0 },
    });
    const o = back.json.engine.lastOutage;
    expect(o.downSince).toBe(down.json.engine.downSince);
    expect(o.backAt).toBeGreaterThanOrEqual(o.downSince);
    expect(o.adoptedAt).toBeGreaterThanOrEqual(o.backAt);
    for (const s of sandboxes) expect(manager.get(s.id).state).toBe('running');
  });
});
