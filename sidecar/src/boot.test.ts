// A sandbox is ready when its sidecar first answers: GET /health and PUT /env (with its auth, its
// checks and the token rotation) are answered before the rest of the app has loaded, and the app
// loads once the env is delivered. The first test's app loader never finishes until released.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contextString } from '@agent-sandbox/attestation';
import { describe, expect, it } from 'vitest';
import type { SidecarApp } from './app.ts';
import type { BearerAuth } from './http/auth.ts';
import { startFakeDstack } from './testing/fake-dstack.ts';
import { startSidecarFixture } from './testing/sidecar-fixture.ts';

/** An app loader that records its calls and finishes only when released (with a stand-in app). */
function heldApp() {
  let calls = 0;
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let called!: () => void;
  const firstCall = new Promise<void>((r) => {
    called = r;
  });
  const standIn = { router: { handle: () => {} }, close() {} } as unknown as SidecarApp;
  return {
    loadApp: async (_auth: BearerAuth): Promise<SidecarApp> => {
      calls++;
      called();
      await released;
      return standIn;
    },
    firstCall,
    calls: () => calls,
    release: () => release(),
  };
}

describe('sidecar boot: ready at the first answer', () => {
  it('answers /health and takes PUT /env while its app has not loaded, with the same checks', async () => {
    const held = heldApp();
    const f = await startSidecarFixture({ SIDECAR_MAX_BODY_BYTES: '4096' }, { loadApp: held.loadApp });
    try {
      expect((await f.call('GET', '/health', undefined, { token: null })).status).toBe(200);
      expect(f.sidecar.appRequested).toBe(false);
      // Auth, names the platform owns, the body limit and a short token: refused, nothing loaded.
      expect((await f.call('PUT', '/env', { env: {} }, { token: null })).status).toBe(401);
      expect((await f.call('PUT', '/env', { env: {} }, { token: 'f'.repeat(64) })).status).toBe(403);
      const owned = await f.call('PUT', '/env', { env: { LD_PRELOAD: '/x' } });
      expect(owned.status).toBe(400);
      expect(owned.json.error.message).toContain('"LD_PRELOAD"');
      expect((await f.call('PUT', '/env', { env: { A: 'x'.repeat(5000) } })).status).toBe(413);
      expect((await f.call('PUT', '/env', { env: {}, token: 'short' })).status).toBe(400);
      expect(f.config.userEnv.current).toEqual({});
      expect(f.sidecar.appRequested).toBe(false);

      const next = 'n'.repeat(64);
      const r = await f.call('PUT', '/env', { env: { GREETING: 'hi' }, token: next });
      expect(r.status).toBe(200);
      expect(r.json.names).toEqual(['GREETING']);
      expect(f.config.userEnv.current).toEqual({ GREETING: 'hi' });
      // The delivery starts the app's load; until it is done, /health and the delivery still answer.
      await held.firstCall;
      expect((await f.call('GET', '/health', undefined, { token: null })).status).toBe(200);
      expect((await f.call('PUT', '/env', { env: {} })).status).toBe(403);
      expect((await f.call('PUT', '/env', { env: { GREETING: 'hello' } }, { token: next })).status).toBe(200);
      expect(held.calls()).toBe(1);
    } finally {
      held.release();
      await f.close();
    }
  });

  it('the rotated token is the one every route of the loaded app takes', async () => {
    const f = await startSidecarFixture();
    try {
      const next = 'm'.repeat(64);
      expect((await f.call('PUT', '/env', { env: { V: 'x' }, token: next })).status).toBe(200);
      await f.sidecar.app();
      expect((await f.call('POST', '/terminals/commands', { command: 'true' })).status).toBe(403);
      const ok = await f.call('POST', '/terminals/commands', { command: 'echo $V' }, { token: next });
      expect(ok.json.result.stdout.trim()).toBe('x');
      // A later delivery (a resume) goes to the boot router again and still needs the new token.
      expect((await f.call('PUT', '/env', { env: {} })).status).toBe(403);
      expect((await f.call('PUT', '/env', { env: { V: 'y' } }, { token: next })).status).toBe(200);
      const again = await f.call('POST', '/terminals/commands', { command: 'echo $V' }, { token: next });
      expect(again.json.result.stdout.trim()).toBe('y');
    } finally {
      await f.close();
    }
  });
});

// In a CVM the env is the owner's (through the owner channel); the operator's token must not
// deliver it, not even in the moment before the app has loaded.
describe('sidecar boot in a CVM (SIDECAR_TEE=dstack)', () => {
  it("refuses the operator's PUT /env: only the app's owner route takes a delivery there", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sidecar-boot-tee-'));
    const dstack = await startFakeDstack(join(dir, 'dstack.sock'));
    const ctx = contextString({
      chainId: 31337,
      serviceId: 7,
      sandboxId: `sbx-${'2'.repeat(32)}`,
      operator: `0x${'ab'.repeat(20)}`,
      owner: `0x${'cd'.repeat(20)}`,
    });
    const f = await startSidecarFixture({
      SIDECAR_TEE: 'dstack',
      SIDECAR_TEE_CONTEXT: ctx,
      SIDECAR_DSTACK_SOCKET: dstack.socketPath,
    });
    try {
      expect((await f.call('GET', '/health', undefined, { token: null })).status).toBe(200);
      const r = await f.call('PUT', '/env', { env: { PLANTED: 'by-the-operator' } });
      expect(r.status).toBe(403);
      expect(f.config.userEnv.current).toEqual({});
    } finally {
      await f.close();
      await dstack.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
