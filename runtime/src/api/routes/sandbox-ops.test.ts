// Sandbox view, stop/resume (idempotent), snapshot and secrets: happy, error and security cases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';

const SECRET_VALUE = 'sk-live-7f3a9c1e5b2d4680aaaabbbbccccdddd';

describe('sandbox view, lifecycle, snapshot, secrets', () => {
  let h: Harness;
  let o: Awaited<ReturnType<Harness['newOwner']>>;
  beforeAll(async () => {
    h = await startHarness({ config: { rateLimits: { write: 1000, read: 1000 } } });
    o = await h.newOwner();
  });
  afterAll(async () => {
    assertNoLeaks(h, [SECRET_VALUE, 'visible-config', '/var/secret/path', 'must-not-leak'], [o.token]);
    await h.close();
  });
  const base = (id: string) => `/api/sandboxes/${id}`;

  it('GET one sandbox: state, resources, timers, ports, timestamps; never the token or env values', async () => {
    // What the runtime really records: the declared ports and their loopback host ports.
    const rec = h.addSandbox(o.address, {
      exposedPorts: [3000, 5173],
      exposedHostPorts: { '3000': 49_153, '5173': 49_154 },
    });
    const r = await h.call('GET', base(rec.id), { token: o.token });
    expect(r.json).toMatchObject({
      id: rec.id,
      state: 'running',
      resources: { cpuCores: 1, memoryMb: 512 },
      timers: { idleTimeoutSeconds: 600 },
      ports: { '3000': { proxy: 'port/3000/' }, '5173': { proxy: 'port/5173/' } },
      created_at: rec.createdAt,
      secret_names: [],
    });
    expect(r.text).not.toContain(rec.token);
    expect(r.text).not.toContain('49153'); // host ports are the operator's business
  });

  it("GET shows the sandbox's network policy (null without one)", async () => {
    const plain = h.addSandbox(o.address);
    expect((await h.call('GET', base(plain.id), { token: o.token })).json.network).toBeNull();
    const policed = h.addSandbox(o.address, {
      network: { mode: 'strict', allowDomains: ['github.com'], includeImplicitDomains: true },
    });
    expect((await h.call('GET', base(policed.id), { token: o.token })).json.network).toEqual({
      mode: 'strict',
      allow_domains: ['github.com'],
      include_implicit_domains: true,
    });
  });

  it('stop → exec refused → resume → exec works; both idempotent', async () => {
    const id = h.addSandbox(o.address).id;
    const stop = await h.call('POST', `${base(id)}/stop`, { token: o.token });
    expect(stop.json).toEqual({ success: true, sandbox_id: id, state: 'stopped' });
    expect((await h.call('POST', `${base(id)}/stop`, { token: o.token })).json.state).toBe('stopped');
    const refused = await h.call('POST', `${base(id)}/exec`, { token: o.token, body: { command: 'echo x' } });
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe('SANDBOX_STOPPED');
    const term = await h.call('POST', `${base(id)}/terminals`, { token: o.token, body: {} });
    expect(term.json.error.code).toBe('SANDBOX_STOPPED');
    const resume = await h.call('POST', `${base(id)}/resume`, { token: o.token });
    expect(resume.json).toEqual({ success: true, sandbox_id: id, state: 'running' });
    expect((await h.call('POST', `${base(id)}/resume`, { token: o.token })).json.state).toBe('running');
    expect(
      (await h.call('POST', `${base(id)}/exec`, { token: o.token, body: { command: 'echo back' } })).json
        .stdout,
    ).toBe('back\n');
  });

  it('stop cancels an active run first', async () => {
    const id = h.addSandbox(o.address).id;
    h.sidecar.behaviour.parts = 1000;
    h.sidecar.behaviour.eventDelayMs = 10;
    try {
      const p = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'x' } });
      await new Promise((r) => setTimeout(r, 50));
      await h.call('POST', `${base(id)}/stop`, { token: o.token });
      expect((await h.call('GET', `${base(id)}/runs/${p.json.run_id}`, { token: o.token })).json.status).toBe(
        'cancelled',
      );
    } finally {
      h.sidecar.behaviour.parts = 3;
      h.sidecar.behaviour.eventDelayMs = 5;
    }
  });

  it('snapshot answers only public facts', async () => {
    const id = h.addSandbox(o.address).id;
    const r = await h.call('POST', `${base(id)}/snapshot`, { token: o.token });
    expect(r.json).toEqual({ success: true, sandbox_id: id, snapshot: { imageId: 'sha256:abc' } });
  });

  it('secrets: set → names only → wipe', async () => {
    const id = h.addSandbox(o.address).id;
    const set = await h.call('POST', `${base(id)}/secrets`, {
      token: o.token,
      body: { env: { OPENAI_API_KEY: SECRET_VALUE, B_TOKEN: 'x' } },
    });
    expect(set.json).toEqual({ status: 'secrets_configured', sandbox_id: id });
    expect(h.sandboxes.records.get(id)?.userEnv.OPENAI_API_KEY).toBe(SECRET_VALUE);
    const names = await h.call('GET', `${base(id)}/secrets`, { token: o.token });
    expect(names.json).toEqual({ sandbox_id: id, names: ['B_TOKEN', 'OPENAI_API_KEY'] });
    expect((await h.call('GET', base(id), { token: o.token })).json.secret_names).toEqual([
      'B_TOKEN',
      'OPENAI_API_KEY',
    ]);
    const wipe = await h.call('DELETE', `${base(id)}/secrets`, { token: o.token });
    expect(wipe.json).toEqual({ status: 'secrets_wiped', sandbox_id: id });
    expect((await h.call('GET', `${base(id)}/secrets`, { token: o.token })).json.names).toEqual([]);
  });

  it('secrets limits: 0 keys, 257 keys, a 257-char key, a value over 64 KiB → 400 without echoing values', async () => {
    const id = h.addSandbox(o.address).id;
    const post = (env: unknown) => h.call('POST', `${base(id)}/secrets`, { token: o.token, body: { env } });
    expect((await post({})).status).toBe(400);
    const many: Record<string, string> = {};
    for (let i = 0; i < 257; i++) many[`K${i}`] = 'v';
    expect((await post(many)).status).toBe(400);
    delete many.K256;
    expect((await post(many)).status).toBe(200);
    expect((await post({ [`K${'x'.repeat(256)}`]: 'v' })).status).toBe(400);
    const big = await post({ BIG: `${SECRET_VALUE}${'x'.repeat(64 * 1024)}` });
    expect(big.status).toBe(400);
    expect(big.text).not.toContain(SECRET_VALUE);
    expect((await post({ OK: 'x'.repeat(64 * 1024) })).status).toBe(200);
    expect((await post({ A: 5 })).status).toBe(400);
  });
});
