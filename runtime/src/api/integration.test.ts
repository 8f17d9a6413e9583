// The operator API on the real SandboxManager, real Docker engine and the project's sandbox image:
// sign in, exec, a prompt run streamed through a SANDBOX_AGENT_COMMAND agent (with a Last-Event-ID
// reconnect), a terminal, file routes (upload/download byte-identical, escapes and other wallets
// refused), secrets into exec's env, wipe, stop → refused → resume with files kept.
import { createHash } from 'node:crypto';
import pino from 'pino';
import { Registry } from 'prom-client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionAuth } from '../auth/index.ts';
import { makeRig, type TestRig } from '../sandbox/testing/rig.ts';
import { createOperatorApi } from './app.ts';
import type { ApiSandboxes } from './deps.ts';
import { type OperatorApiServer, serveOperatorApi } from './serve.ts';
import { signInOverHttp } from './testing/sign-in.ts';
import { readSse } from './testing/sse-reader.ts';

const image = inject('sandboxImage');
const SECRET = 'sk-integration-5f1e0c9a7d3b2e4f6a8c';
// Shell parameter expansion, not a JS template.
// biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax
const ABSENT_PROBE = 'echo "[${MY_SECRET:-absent}]"';
const AGENT =
  'for i in 1 2 3 4 5 6; do echo "step $i"; sleep 0.3; done; echo "reply: $SIDECAR_AGENT_MESSAGE"';

describe('operator API on real sandboxes', () => {
  let rig: TestRig;
  let server: OperatorApiServer;
  let token: string;
  let id: string;
  const responses: string[] = [];
  const account = privateKeyToAccount(generatePrivateKey());

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
    responses.push(text);
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
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
      owner: account.address, // checksummed on chain; compared case-insensitively
      serviceId: 1,
      callId: 'api-int-1',
      env: { SANDBOX_AGENT_COMMAND: AGENT },
    });
    id = rec.id;
    token = await signInOverHttp(server.url, account);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await rig?.cleanup();
  });

  it('lists and execs', async () => {
    const list = await call('GET', '/api/sandboxes');
    expect(list.json.sandboxes.map((s: { id: string }) => s.id)).toEqual([id]);
    const r = await call('POST', `/api/sandboxes/${id}/exec`, {
      command: 'echo hi > /home/agent/kept.txt && whoami',
    });
    expect(r.json).toEqual({ exit_code: 0, stdout: 'agent\n', stderr: '' });
  });

  it('files: upload → list → download byte-identical; escapes and another wallet refused', async () => {
    const bytes = Buffer.from([0, 1, 2, 253, 254, 255, ...Buffer.from('héllo')]);
    const base = `${server.url}/api/sandboxes/${id}/files`;
    const auth = { authorization: `Bearer ${token}` };
    const put = await fetch(`${base}/content?path=up/bin.dat`, { method: 'PUT', headers: auth, body: bytes });
    expect(put.status).toBe(200);
    expect(((await put.json()) as { sha256: string }).sha256).toBe(
      createHash('sha256').update(bytes).digest('hex'),
    );
    const ls = await call('GET', `/api/sandboxes/${id}/files?path=up`);
    expect(ls.json.entries).toEqual([
      expect.objectContaining({ name: 'bin.dat', type: 'file', size: bytes.length }),
    ]);
    const get = await fetch(`${base}/content?path=up/bin.dat`, { headers: auth });
    expect(get.headers.get('content-disposition')).toContain('attachment');
    expect(Buffer.from(await get.arrayBuffer())).toEqual(bytes);
    // A symlink the agent planted pointing outside, `..` and absolute paths: all refused.
    await call('POST', `/api/sandboxes/${id}/exec`, { command: 'ln -s /etc /home/agent/etc-link' });
    for (const q of ['etc-link/passwd', '../../etc/passwd', '/etc/passwd', 'etc-link/../etc-link/hostname']) {
      const r = await fetch(`${base}/content?path=${encodeURIComponent(q)}`, { headers: auth });
      expect(r.status).toBe(403);
      expect(await r.text()).not.toContain('root:');
    }
    expect((await call('GET', `/api/sandboxes/${id}/files?path=etc-link`)).status).toBe(403);
    const w = await fetch(`${base}/content?path=etc-link/pwned`, { method: 'PUT', headers: auth, body: 'x' });
    expect(w.status).toBe(403);
    const other = await signInOverHttp(server.url, privateKeyToAccount(generatePrivateKey()));
    const oh = { authorization: `Bearer ${other}` };
    expect((await fetch(`${base}?path=up`, { headers: oh })).status).toBe(403);
    expect((await fetch(`${base}/content?path=up/bin.dat`, { headers: oh })).status).toBe(403);
    const ow = await fetch(`${base}/content?path=up/bin.dat`, { method: 'PUT', headers: oh, body: 'x' });
    expect(ow.status).toBe(403);
    expect(
      Buffer.from(await (await fetch(`${base}/content?path=up/bin.dat`, { headers: auth })).arrayBuffer()),
    ).toEqual(bytes);
  }, 60_000);

  it('streams a prompt run to completion, and a reconnect with Last-Event-ID continues without gaps', async () => {
    const p = await call('POST', `/api/sandboxes/${id}/prompt`, { message: 'hello agent' });
    expect(p.status).toBe(202);
    const url = `${server.url}/api/sandboxes/${id}/runs/${p.json.run_id}/events`;
    const first = await readSse(url, { token, stopAfter: 3, timeoutMs: 30_000 });
    const rest = await readSse(url, { token, lastEventId: first.events.at(-1)!.id!, timeoutMs: 30_000 });
    const all = [...first.events, ...rest.events];
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => `${p.json.run_id}:${i + 1}`));
    expect(all.at(-1)!.event).toBe('run.completed');
    const run = await call('GET', `/api/sandboxes/${id}/runs/${p.json.run_id}`);
    expect(run.json.status).toBe('completed');
    expect(run.json.final_text).toContain('reply: hello agent');
  }, 60_000);

  it('opens a terminal and sees its output streamed', async () => {
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
  }, 30_000);

  it('secrets reach exec’s env, only names come back, wipe removes them', async () => {
    const digest = createHash('sha256').update(SECRET).digest('hex').slice(0, 12);
    const set = await call('POST', `/api/sandboxes/${id}/secrets`, { env: { MY_SECRET: SECRET } });
    expect(set.json).toEqual({ status: 'secrets_configured', sandbox_id: id });
    const probe = 'printf %s "$MY_SECRET" | sha256sum | cut -c1-12';
    expect((await call('POST', `/api/sandboxes/${id}/exec`, { command: probe })).json.stdout.trim()).toBe(
      digest,
    );
    expect((await call('GET', `/api/sandboxes/${id}/secrets`)).json.names).toEqual(['MY_SECRET']);
    expect((await call('DELETE', `/api/sandboxes/${id}/secrets`)).json.status).toBe('secrets_wiped');
    const after = await call('POST', `/api/sandboxes/${id}/exec`, { command: ABSENT_PROBE });
    expect(after.json.stdout).toBe('[absent]\n');
  }, 120_000);

  it('stop → exec refused → resume → exec works and workspace files are still there', async () => {
    expect((await call('POST', `/api/sandboxes/${id}/stop`)).json).toEqual({
      success: true,
      sandbox_id: id,
      state: 'stopped',
    });
    const refused = await call('POST', `/api/sandboxes/${id}/exec`, { command: 'true' });
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe('SANDBOX_STOPPED');
    expect((await call('POST', `/api/sandboxes/${id}/resume`)).json.state).toBe('running');
    const r = await call('POST', `/api/sandboxes/${id}/exec`, { command: 'cat /home/agent/kept.txt' });
    expect(r.json.stdout).toBe('hi\n');
  }, 120_000);

  it('no response carried the sidecar token or the secret', () => {
    const rec = rig.manager.get(id);
    for (const t of responses) {
      expect(t.includes(rec.token)).toBe(false);
      expect(t.includes(SECRET)).toBe(false);
    }
  });
});
