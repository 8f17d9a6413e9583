// Issue 29, the engine gone for good (without touching the shared engine): the runtime reaches
// Docker through a Unix socket the test serves in front of the real one; once the manager is open
// that socket goes away for good. A create then waits SANDBOX_ENGINE_WAIT_MS (counted from the
// loss) for it to return and fails with ENGINE_UNAVAILABLE, saying what to do, and its provision
// records the failure; it never hangs.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DockerDriver } from '../docker/driver.ts';
import { isRuntimeError } from '../errors.ts';
import { EncryptedStore } from '../store/store.ts';
import { SandboxManager } from './manager.ts';

const image = inject('sandboxImage');
const RUN = `rteg-${Date.now().toString(36)}`;
let dir: string;
let store: EncryptedStore;
let manager: SandboxManager;
const server = createServer();
const open = new Set<Socket>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), `${RUN}-`));
  const sock = join(dir, 'docker.sock');
  server.on('connection', (c) => {
    const up = connect('/var/run/docker.sock');
    open.add(c).add(up);
    c.pipe(up).pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  });
  await new Promise<void>((res) => server.listen(sock, res));
  store = await EncryptedStore.open({ dir: join(dir, 'store'), secret: '7c'.repeat(32) });
  manager = await SandboxManager.open({
    store,
    driver: new DockerDriver(new Docker({ socketPath: sock })),
    config: {
      operatorId: RUN,
      image,
      snapshotDir: join(dir, 'snapshots'),
      engineWaitMs: 1000,
      extraLabels: { 'agent-sandbox.test': '1', 'agent-sandbox.test.suite': 'engine-gone' },
    },
  });
});

afterAll(async () => {
  await manager?.close().catch(() => {});
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the Docker engine gone for good', () => {
  it('a create fails with ENGINE_UNAVAILABLE after the wait, and a reason that says what to do', async () => {
    // The engine goes away: the socket is removed and every connection to it dropped.
    await new Promise<void>((res) => {
      server.close(() => res());
      for (const s of open) s.destroy();
    });
    const err = await manager
      .create({ owner: '0x000000000000000000000000000000000000dEaD', serviceId: '1', callId: '1' })
      .catch((e: unknown) => e);
    expect(isRuntimeError(err, 'ENGINE_UNAVAILABLE')).toBe(true);
    expect((err as Error).message).toMatch(/Docker engine does not answer .*waited 1000 ms.*Start it/);
    const p = await manager.getProvision('1', '1');
    expect(p).toMatchObject({ phase: 'failed' });
    expect(p.error).toMatch(/Docker engine does not answer/);
  });
});
