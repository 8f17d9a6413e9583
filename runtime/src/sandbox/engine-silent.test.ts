// Issue 29, an engine that accepts connections and never answers (a wedged dockerd): the runtime's
// Docker socket is one this test serves, which accepts every connection and says nothing. Each
// short Docker call has a deadline (SANDBOX_ENGINE_CALL_TIMEOUT_MS), so a create ends with
// ENGINE_UNAVAILABLE naming the call that got no answer, and its provision records the failure;
// before, the create hung for ever. Calls whose length is their work (commit, save, wait, exec
// start, events) keep no deadline.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callDeadline } from '../docker/bounded-calls.ts';
import { DockerDriver } from '../docker/driver.ts';
import { isRuntimeError } from '../errors.ts';
import { EncryptedStore } from '../store/store.ts';
import { SandboxManager } from './manager.ts';

const RUN = `rtes-${Date.now().toString(36)}`;
let dir: string;
let store: EncryptedStore;
let manager: SandboxManager;
const server = createServer();
const held = new Set<Socket>();
let accepted = 0;

/** Settles with `p`'s outcome, or with 'still waiting' after `ms` (the old code's hang). */
const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([
    p.then(
      (v) => ({ settled: 'resolved' as const, v }),
      (e: unknown) => ({ settled: 'rejected' as const, e }),
    ),
    new Promise<{ settled: 'still waiting' }>((r) => setTimeout(() => r({ settled: 'still waiting' }), ms)),
  ]);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), `${RUN}-`));
  const sock = join(dir, 'docker.sock');
  server.on('connection', (c) => {
    accepted++;
    held.add(c);
    c.on('error', () => {});
    c.resume(); // reads the request, never writes a byte back
  });
  await new Promise<void>((res) => server.listen(sock, res));
  store = await EncryptedStore.open({ dir: join(dir, 'store'), secret: '5d'.repeat(32) });
  manager = await SandboxManager.open({
    store,
    driver: new DockerDriver(new Docker({ socketPath: sock })),
    config: {
      operatorId: RUN,
      image: 'agent-sandbox:never-pulled',
      snapshotDir: join(dir, 'snapshots'),
      // Egress none: opening the manager asks the engine nothing.
      egress: 'none',
      sidecarSocketDir: join(dir, 's'),
      engineCallTimeoutMs: 300,
      engineWaitMs: 300,
    },
  });
});

afterAll(async () => {
  await manager?.close().catch(() => {});
  await store?.close();
  for (const s of held) s.destroy();
  await new Promise<void>((res) => server.close(() => res()));
  rmSync(dir, { recursive: true, force: true });
});

describe('a Docker engine that accepts and never answers', () => {
  it('a create fails with ENGINE_UNAVAILABLE naming the call that got no answer, not a hang', async () => {
    const out = await within(
      manager.create({ owner: '0x000000000000000000000000000000000000dEaD', serviceId: '1', callId: '1' }),
      30_000,
    );
    expect(accepted).toBeGreaterThan(0);
    expect(out.settled).toBe('rejected');
    const err = (out as { e: unknown }).e;
    expect(isRuntimeError(err, 'ENGINE_UNAVAILABLE')).toBe(true);
    expect((err as Error).message).toMatch(/did not answer GET \/images\/.+\/json within 300 ms/);
    expect((err as Error).message).toMatch(/Start it/);
    const p = await manager.getProvision('1', '1');
    expect(p.phase).toBe('failed');
    expect(p.error).toMatch(/Docker engine does not answer/);
    // The watch saw it too: /health's engine status says so.
    expect(manager.engineStatus()).toMatchObject({ state: 'down' });
    expect(manager.engineStatus().message).toMatch(/Docker engine unreachable since/);
  });

  it('a second create, once the wait is spent, fails the same way', async () => {
    const out = await within(
      manager.create({ owner: '0x000000000000000000000000000000000000dEaD', serviceId: '1', callId: '2' }),
      30_000,
    );
    expect(out.settled).toBe('rejected');
    expect(isRuntimeError((out as { e: unknown }).e, 'ENGINE_UNAVAILABLE')).toBe(true);
  });

  it('streams and calls as long as their work keep no deadline; stop gets its own grace on top', () => {
    const short = (method: string, path: string, extra = {}) =>
      callDeadline({ method, path, ...extra }, 1000);
    expect(short('GET', '/_ping')).toBe(1000);
    expect(short('GET', '/containers/abc/json')).toBe(1000);
    expect(short('POST', '/containers/create?')).toBe(1000);
    expect(short('POST', '/containers/abc/start?')).toBe(1000);
    expect(short('POST', '/containers/abc/exec')).toBe(1000);
    expect(short('POST', '/containers/abc/stop?', { options: { t: 5 } })).toBe(6000);
    expect(short('POST', '/commit?')).toBeUndefined();
    expect(short('GET', '/images/x/get')).toBeUndefined();
    expect(short('POST', '/images/load?', { isStream: true })).toBeUndefined();
    expect(short('POST', '/containers/abc/wait?')).toBeUndefined();
    expect(short('POST', '/exec/abc/start')).toBeUndefined();
    expect(short('GET', '/containers/abc/archive?')).toBeUndefined();
    expect(short('PUT', '/containers/abc/archive?')).toBeUndefined();
    expect(short('GET', '/events?')).toBeUndefined();
  });
});
