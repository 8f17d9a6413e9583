// Plain compute (created with agent: false): no coding agent. prompt and task answer 409
// AGENT_DISABLED before any run is admitted or the sidecar is asked; exec still works; the
// capability document and the sandbox view say agent: false; the agent program is refused in secrets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';

describe('a plain-compute sandbox (agent: false)', () => {
  let h: Harness;
  let o: Awaited<ReturnType<Harness['newOwner']>>;
  beforeAll(async () => {
    h = await startHarness();
    o = await h.newOwner();
  });
  afterAll(async () => {
    assertNoLeaks(h);
    await h?.close();
  });

  it('refuses prompt and task with AGENT_DISABLED and admits no run; exec works', async () => {
    const id = h.addSandbox(o.address, { agent: false }).id;
    const before = h.sidecar.seen.length;
    for (const [path, body] of [
      ['prompt', { message: 'hi' }],
      ['task', { prompt: 'do it' }],
    ] as const) {
      const r = await h.call('POST', `/api/sandboxes/${id}/${path}`, { token: o.token, body });
      expect(r.status, path).toBe(409);
      expect(r.json.error.code).toBe('AGENT_DISABLED');
      expect(r.json.error.message).toMatch(/plain compute \(created with agent: false\)/);
    }
    expect(h.sidecar.seen.length).toBe(before);
    const e = await h.call('POST', `/api/sandboxes/${id}/exec`, {
      token: o.token,
      body: { command: 'echo hi' },
    });
    expect(e.status).toBe(200);
  });

  it('says agent: false in its capability document and its view; a normal sandbox says true', async () => {
    const plain = h.addSandbox(o.address, { agent: false }).id;
    const normal = h.addSandbox(o.address).id;
    const cp = await h.call('GET', `/api/sandboxes/${plain}/capabilities`, { token: o.token });
    expect(cp.status).toBe(200);
    expect(cp.json.agent).toBe(false);
    expect(cp.json.harnesses).toBeUndefined();
    const cn = await h.call('GET', `/api/sandboxes/${normal}/capabilities`, { token: o.token });
    expect(cn.json.agent).toBe(true);
    expect((await h.call('GET', `/api/sandboxes/${plain}`, { token: o.token })).json.agent).toBe(false);
    expect((await h.call('GET', `/api/sandboxes/${normal}`, { token: o.token })).json.agent).toBe(true);
  });
});
