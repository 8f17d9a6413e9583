// exec: happy path, validation, a stopped sandbox, a hanging sidecar (504) and the breaker (503).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';

describe('POST …/exec', () => {
  let h: Harness;
  let o: Awaited<ReturnType<Harness['newOwner']>>;
  let id: string;
  beforeAll(async () => {
    h = await startHarness({ breakerThreshold: 2, config: { rateLimits: { write: 1000 } } });
    o = await h.newOwner();
    id = h.addSandbox(o.address).id;
  });
  afterAll(async () => {
    assertNoLeaks(h, [], [o.token]);
    await h.close();
  });
  const exec = (body: unknown, sandbox = id) =>
    h.call('POST', `/api/sandboxes/${sandbox}/exec`, { token: o.token, body });

  it('happy: runs the command, non-zero exit is still 200; env and cwd are passed on', async () => {
    expect((await exec({ command: 'echo hello' })).json).toEqual({
      exit_code: 0,
      stdout: 'hello\n',
      stderr: '',
    });
    const fail = await exec({ command: 'exit 3' });
    expect(fail.status).toBe(200);
    expect(fail.json.exit_code).toBe(3);
    await exec({ command: 'env', env: { FOO: 'bar' }, cwd: '/home/agent' });
    expect(h.sidecar.execEnvs.at(-1)).toEqual({ FOO: 'bar' });
  });

  it('error: bad input → 400', async () => {
    expect((await exec({})).status).toBe(400);
    expect((await exec({ command: '' })).status).toBe(400);
    expect((await exec({ command: 'ls', env: { 'BAD-NAME': 'x' } })).status).toBe(400);
    expect((await exec({ command: 'ls', timeout_ms: -1 })).status).toBe(400);
  });

  it('security (hostile user): an env naming a loader, Node or platform variable → 400 naming the key, never sent on', async () => {
    const sent = h.sidecar.execEnvs.length;
    for (const k of ['LD_PRELOAD', 'NODE_OPTIONS', 'AGENT_WORKSPACE_ROOT']) {
      const r = await exec({ command: 'ls', env: { [k]: '/home/agent/evil' } });
      expect(r.status).toBe(400);
      expect(r.json.error.message).toContain(`env "${k}": `);
    }
    expect(h.sidecar.execEnvs.length).toBe(sent);
  });

  it('error: a stopped sandbox → 409 SANDBOX_STOPPED; provisioning → 409 SANDBOX_NOT_RUNNING', async () => {
    const stopped = h.addSandbox(o.address, { state: 'stopped' }).id;
    const r = await exec({ command: 'echo x' }, stopped);
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe('SANDBOX_STOPPED');
    const prov = h.addSandbox(o.address, { state: 'provisioning' }).id;
    expect((await exec({ command: 'echo x' }, prov)).json.error.code).toBe('SANDBOX_NOT_RUNNING');
  });

  it('security: a hanging sidecar → 504 SIDECAR_TIMEOUT, then the breaker opens → 503 CIRCUIT_OPEN', async () => {
    const sbx = h.addSandbox(o.address).id;
    h.sidecar.behaviour.hang = true;
    try {
      const first = await exec({ command: 'sleep' }, sbx);
      expect(first.status).toBe(504);
      expect(first.json.error.code).toBe('SIDECAR_TIMEOUT');
      expect((await exec({ command: 'sleep' }, sbx)).status).toBe(504);
      const open = await exec({ command: 'echo x' }, sbx);
      expect(open.status).toBe(503);
      expect(open.json.error.code).toBe('CIRCUIT_OPEN');
      expect(open.json.error.retry_after_ms).toBeGreaterThan(0);
      expect(Number(open.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      h.sidecar.behaviour.hang = false;
    }
    // The breaker is per sandbox: the first sandbox still works.
    expect((await exec({ command: 'echo still' })).status).toBe(200);
  });

  it('security: a broken sidecar → 502 with a generic message (its text stays in the logs)', async () => {
    const sbx = h.addSandbox(o.address).id;
    h.sidecar.behaviour.broken = true;
    try {
      const r = await exec({ command: 'echo x' }, sbx);
      expect(r.status).toBe(502);
      expect(r.text).not.toContain('boom');
    } finally {
      h.sidecar.behaviour.broken = false;
    }
  });
});
