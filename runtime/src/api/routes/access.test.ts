// Authorization on every sandbox route, table-driven: another owner → 403, a token scoped to
// another sandbox → 403, no/invalid token → 401, unknown sandbox → 404; nothing happens on refusal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';

const RUN = 'run-000000000000000000000000';
/** Every sandbox route, relative to the sandbox's base path. */
const ROUTES: Array<[string, string, unknown?]> = [
  ['GET', ''],
  ['POST', '/exec', { command: 'echo hi' }],
  ['POST', '/prompt', { message: 'hi' }],
  ['POST', '/task', { prompt: 'do it' }],
  ['GET', `/runs/${RUN}`],
  ['GET', `/runs/${RUN}/events`],
  ['POST', `/runs/${RUN}/cancel`],
  ['POST', '/stop'],
  ['POST', '/resume'],
  ['POST', '/snapshot'],
  ['POST', '/secrets', { env: { A: 'b' } }],
  ['DELETE', '/secrets'],
  ['GET', '/secrets'],
  ['POST', '/terminals', {}],
  ['GET', '/terminals'],
  ['GET', '/terminals/t1'],
  ['PATCH', '/terminals/t1', { cols: 80, rows: 24 }],
  ['DELETE', '/terminals/t1'],
  ['GET', '/terminals/t1/stream'],
  ['POST', '/terminals/t1/input', { data: 'ls\n' }],
  ['GET', '/port/3000/'],
  ['POST', '/port/3000/api/x', { a: 1 }],
];

describe('sandbox route authorization', () => {
  let h: Harness;
  let a: Awaited<ReturnType<Harness['newOwner']>>;
  let b: Awaited<ReturnType<Harness['newOwner']>>;
  let aSbx: string;
  let bSbx: string;
  let aScopedToB: string;
  beforeAll(async () => {
    h = await startHarness({
      config: { rateLimits: { read: 10_000, write: 10_000, terminal: 10_000, auth: 1000 } },
    });
    a = await h.newOwner();
    b = await h.newOwner();
    // Owner stored checksummed: the comparison must be case-insensitive.
    aSbx = h.addSandbox(a.account.address).id;
    bSbx = h.addSandbox(b.address).id;
    aScopedToB = await h.signIn(a.account, `sandbox:${bSbx}`);
  });
  afterAll(async () => {
    assertNoLeaks(h, [], [a.token, b.token, aScopedToB]);
    await h.close();
  });

  it.each(ROUTES)('owner B on owner A’s sandbox: %s …%s → 403', async (method, path, body) => {
    const before = h.sidecar.seen.length;
    const r = await h.call(method, `/api/sandboxes/${aSbx}${path}`, { token: b.token, body });
    expect(r.status).toBe(403);
    expect(r.json.error.code).toBe('FORBIDDEN');
    expect(h.sidecar.seen.length).toBe(before);
    expect(h.sandboxes.records.get(aSbx)?.state).toBe('running');
    expect(h.sandboxes.records.get(aSbx)?.userEnv).toEqual({});
  });

  it.each(ROUTES)('token scoped to another sandbox: %s …%s → 403', async (method, path, body) => {
    // A owns aSbx, but this token is scoped to bSbx.
    const r = await h.call(method, `/api/sandboxes/${aSbx}${path}`, { token: aScopedToB, body });
    expect(r.status).toBe(403);
  });

  it.each(ROUTES)('no token: %s …%s → 401', async (method, path, body) => {
    const r = await h.call(method, `/api/sandboxes/${aSbx}${path}`, { body });
    expect(r.status).toBe(401);
  });

  it.each(ROUTES)('unknown sandbox: %s …%s → 404', async (method, path, body) => {
    const r = await h.call(method, `/api/sandboxes/sbx-${'0'.repeat(32)}${path}`, { token: a.token, body });
    expect(r.status).toBe(404);
  });

  it('lists only the caller’s sandboxes; a scoped token lists only its sandbox', async () => {
    const ra = await h.call('GET', '/api/sandboxes', { token: a.token });
    expect(ra.json.sandboxes.map((s: { id: string }) => s.id)).toEqual([aSbx]);
    const rb = await h.call('GET', '/api/sandboxes', { token: b.token });
    expect(rb.json.sandboxes.map((s: { id: string }) => s.id)).toEqual([bSbx]);
    const scoped = await h.signIn(a.account, `sandbox:${aSbx}`);
    h.addSandbox(a.address);
    const rs = await h.call('GET', '/api/sandboxes', { token: scoped });
    expect(rs.json.sandboxes.map((s: { id: string }) => s.id)).toEqual([aSbx]);
    expect(ra.text).not.toContain('token');
  });

  it('the owner’s own requests count as activity; refused ones do not', async () => {
    const before = h.sandboxes.touches.filter((t) => t === bSbx).length;
    await h.call('GET', `/api/sandboxes/${bSbx}`, { token: b.token });
    await h.call('GET', `/api/sandboxes/${bSbx}`, { token: a.token });
    await new Promise((r) => setTimeout(r, 10));
    expect(h.sandboxes.touches.filter((t) => t === bSbx).length).toBe(before + 1);
  });
});

describe('instance mode: the same routes under /api/sandbox', () => {
  let h: Harness;
  let owner: Awaited<ReturnType<Harness['newOwner']>>;
  let other: Awaited<ReturnType<Harness['newOwner']>>;
  let id: string;
  beforeAll(async () => {
    h = await startHarness({
      mode: 'instance',
      config: { rateLimits: { read: 10_000, write: 10_000, terminal: 10_000, auth: 1000 } },
      deps: { instanceSandboxId: () => id },
    });
    owner = await h.newOwner();
    other = await h.newOwner();
    id = h.addSandbox(owner.address).id;
  });
  afterAll(async () => {
    assertNoLeaks(h, [], [owner.token, other.token]);
    await h.close();
  });

  it.each(ROUTES)('another wallet: %s /api/sandbox%s → 403', async (method, path, body) => {
    const r = await h.call(method, `/api/sandbox${path}`, { token: other.token, body });
    expect(r.status).toBe(403);
  });

  it('the owner reaches the instance sandbox, with an instance-scoped token too', async () => {
    expect((await h.call('GET', '/api/sandbox', { token: owner.token })).json.id).toBe(id);
    const exec = await h.call('POST', '/api/sandbox/exec', {
      token: owner.token,
      body: { command: 'echo inst' },
    });
    expect(exec.json).toEqual({ exit_code: 0, stdout: 'inst\n', stderr: '' });
    const scoped = await h.signIn(owner.account, `instance:${id}`);
    expect((await h.call('GET', '/api/sandbox', { token: scoped })).status).toBe(200);
    const caps = await h.call('GET', '/api/capabilities');
    expect(caps.json.mode).toBe('instance');
  });
});
