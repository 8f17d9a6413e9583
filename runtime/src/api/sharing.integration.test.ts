// Sharing a sandbox, on the real SandboxManager, Docker engine, LevelDB store and operator API:
// team access (a member signs in as itself and execs and watches a PTY of the real sidecar; its
// removal ends the open stream at once; members survive an operator restart) and preview links
// (off by default; anyone with a link reaches that one port of that sandbox on its preview host,
// a WebSocket included, and nothing else; revocation and expiry end open connections at once;
// rate-limited per link; links survive a restart).
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { Duplex } from 'node:stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionAuth } from '../auth/index.ts';
import { makeRig, sidecarExec, type TestRig } from '../sandbox/testing/rig.ts';
import { createOperatorApi, type OperatorApi } from './app.ts';
import type { ApiConfigInput } from './config.ts';
import type { ApiSandboxes } from './deps.ts';
import { type OperatorApiServer, serveOperatorApi } from './serve.ts';
import { PROXY_APP_JS } from './testing/proxy-apps.ts';
import { signInOverHttp } from './testing/sign-in.ts';

const image = inject('sandboxImage');
const APP = Buffer.from(PROXY_APP_JS).toString('base64');
const SERVE = `echo ${APP} | base64 -d > /tmp/app.cjs && (nohup node /tmp/app.cjs 3000 >/dev/null 2>&1 &) && (nohup node /tmp/app.cjs 3001 >/dev/null 2>&1 &)`;
const PER_LINK_PER_MINUTE = 25;

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

describe('sharing a real sandbox: team access and preview links', () => {
  let rig: TestRig;
  let server: OperatorApiServer;
  let api: OperatorApi;
  let id: string;
  const owner = privateKeyToAccount(generatePrivateKey());
  const member = privateKeyToAccount(generatePrivateKey());
  const later = privateKeyToAccount(generatePrivateKey());
  const tokens = new Map<string, string>();
  const config: ApiConfigInput = {
    rateLimits: { read: 10_000, write: 10_000, auth: 100 },
    previewLinks: { enabled: true, requestsPerMinute: PER_LINK_PER_MINUTE },
  };

  const start = async (cfg: ApiConfigInput = config) => {
    const sessions = await SessionAuth.create({
      secret: rig.secret,
      store: rig.store,
      siwe: { publicUrl: () => server.url, chainId: 31337 },
    });
    const sandboxes: ApiSandboxes = rig.manager;
    const a = createOperatorApi(
      {
        sessions,
        sandboxes,
        store: rig.store,
        metrics: new Registry(),
        logger: pino({ level: 'silent' }),
        mode: 'cloud',
        capabilities: {},
      },
      cfg,
    );
    return { api: a, server: await serveOperatorApi(a, { port: 0 }) };
  };
  const signIn = async (a: typeof owner) => tokens.set(a.address, await signInOverHttp(server.url, a));
  const call = async (method: string, path: string, who: typeof owner, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${tokens.get(who.address)}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    // biome-ignore lint/suspicious/noExplicitAny: test convenience
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, json };
  };
  const exec = (who: typeof owner, command: string) =>
    call('POST', `/api/sandboxes/${id}/exec`, who, { command });
  /** A request to the operator naming `host` (a preview host), with no session. */
  const onHost = (host: string, path: string, cookie?: string) =>
    new Promise<Raw>((resolve, reject) => {
      const u = new URL(server.url);
      const req = request(
        { host: u.hostname, port: u.port, path, headers: { host, ...(cookie ? { cookie } : {}) } },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => {
            text += d.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  const hostOf = (port: number, sid = id) => `p${port}-${sid}.localhost:${new URL(server.url).port}`;
  /** Opens a link: its entry path sets the cookie every later request carries. */
  const openLink = async (url: string) => {
    const u = new URL(url);
    const r = await onHost(u.host, `${u.pathname}${u.search}`);
    expect(r.status).toBe(303);
    const setCookie = String(r.headers['set-cookie']);
    expect(setCookie).toMatch(/^asb_link=pl_[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax/);
    return setCookie.split(';')[0]!;
  };
  const createLink = async (port: number, extra: Record<string, unknown> = {}) => {
    const r = await call('POST', `/api/sandboxes/${id}/preview-links`, owner, { port, ...extra });
    expect(r.status).toBe(200);
    return r.json as { id: string; url: string; expires_at: string; state: string };
  };
  /** A WebSocket through a preview host; resolves once upgraded (or with the refusal's status). */
  const openWs = (host: string, cookie: string) =>
    new Promise<{ status: number; socket?: Duplex }>((resolve, reject) => {
      const u = new URL(server.url);
      const req = request({
        host: u.hostname,
        port: u.port,
        path: '/ws',
        headers: {
          host,
          cookie,
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': randomBytes(16).toString('base64'),
        },
      });
      req.on('error', reject);
      req.on('response', (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0 });
      });
      req.on('upgrade', (res, socket) => resolve({ status: res.statusCode ?? 0, socket }));
      req.end();
    });
  const echo = (socket: Duplex, text: string) =>
    new Promise<string>((resolve) => {
      const p = Buffer.from(text);
      const mask = randomBytes(4);
      const masked = Buffer.from(p.map((b, i) => b ^ mask[i % 4]!));
      socket.once('data', (d: Buffer) => resolve(d.subarray(2).toString()));
      socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | p.length]), mask, masked]));
    });
  const closed = (socket: Duplex) =>
    new Promise<void>((resolve) => {
      if (socket.destroyed) return resolve();
      socket.once('close', () => resolve());
    });

  beforeAll(async () => {
    rig = await makeRig(image);
    ({ api, server } = await start());
    const rec = await rig.manager.create({
      owner: owner.address,
      serviceId: 1,
      callId: 'sharing-int-1',
      exposedPorts: [3000, 3001],
    });
    id = rec.id;
    await sidecarExec(rig.manager.sidecarEndpoint(id), `echo shared > /home/agent/hello.txt && ${SERVE}`);
    for (const a of [owner, member, later]) await signIn(a);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await rig?.cleanup();
  });

  it('a member execs and watches a real PTY as itself; removing it ends the stream and its access at once', async () => {
    expect((await exec(member, 'true')).status).toBe(403);
    const add = await call('POST', `/api/sandboxes/${id}/members`, owner, { address: member.address });
    expect(add.status).toBe(200);
    expect(add.json.members).toEqual([member.address.toLowerCase()]);
    const r = await exec(member, 'cat /home/agent/hello.txt');
    expect(r.status).toBe(200);
    expect(r.json.stdout).toBe('shared\n');

    const term = await call('POST', `/api/sandboxes/${id}/terminals`, member, {});
    expect(term.status).toBe(200);
    const tid = term.json.sessionId as string;
    const res = await fetch(`${server.url}/api/sandboxes/${id}/terminals/${tid}/stream`, {
      headers: { authorization: `Bearer ${tokens.get(member.address)}` },
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await call('POST', `/api/sandboxes/${id}/terminals/${tid}/input`, member, {
      data: 'echo mark-$((40+2))\n',
    });
    let seen = '';
    while (!seen.includes('mark-42')) seen += new TextDecoder().decode((await reader.read()).value);

    const removed = await call('DELETE', `/api/sandboxes/${id}/members/${member.address}`, owner);
    expect(removed.status).toBe(200);
    // The owner's input to the same PTY never reaches the removed member: its stream has ended.
    await call('POST', `/api/sandboxes/${id}/terminals/${tid}/input`, owner, {
      data: 'echo after-$((1+1))\n',
    });
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).not.toContain('after-2');
    expect((await exec(member, 'true')).status).toBe(403);
    expect((await call('GET', `/api/sandboxes/${id}/terminals/${tid}/stream`, member)).status).toBe(403);
  }, 60_000);

  it('preview links are off unless the operator enables them', async () => {
    const off = await start({ rateLimits: config.rateLimits });
    try {
      const res = await fetch(`${off.server.url}/api/sandboxes/${id}/preview-links`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.get(owner.address)}`, 'content-type': 'application/json' },
        body: JSON.stringify({ port: 3000 }),
      });
      expect(res.status).toBe(409);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
        /PREVIEW_LINKS=true/,
      );
    } finally {
      await off.server.close();
    }
  });

  it('anyone with the link reaches that one port of that sandbox, and nothing else', async () => {
    const deadline = Date.now() + 20_000;
    while ((await call('GET', `/api/sandboxes/${id}/port/3000/`, owner)).status !== 200) {
      if (Date.now() > deadline) throw new Error('the app on port 3000 never answered');
      await new Promise((r) => setTimeout(r, 200));
    }
    await call('POST', `/api/sandboxes/${id}/members`, owner, { address: member.address });
    expect((await call('POST', `/api/sandboxes/${id}/preview-links`, member, { port: 3000 })).status).toBe(
      403,
    );
    expect((await call('POST', `/api/sandboxes/${id}/preview-links`, owner, { port: 3002 })).status).toBe(
      404,
    );
    const tooLong = await call('POST', `/api/sandboxes/${id}/preview-links`, owner, {
      port: 3000,
      expires_in_seconds: 8 * 24 * 3600,
    });
    expect(tooLong.status).toBe(400);

    const link = await createLink(3000);
    const other = await createLink(3000);
    expect(link.url).not.toBe(other.url);
    expect(new URL(link.url).host).toBe(hostOf(3000));
    expect(Date.parse(link.expires_at) - Date.now()).toBeGreaterThan(23 * 3600_000);
    // The list never shows a token.
    const list = await call('GET', `/api/sandboxes/${id}/preview-links`, owner);
    expect(JSON.stringify(list.json)).not.toContain(new URL(link.url).searchParams.get('t'));
    expect(list.json.links.map((l: { id: string }) => l.id)).toEqual([link.id, other.id]);

    expect((await onHost(hostOf(3000), '/')).status).toBe(401);
    const cookie = await openLink(link.url);
    const page = await onHost(hostOf(3000), '/hello?x=1', cookie);
    expect(page.status).toBe(200);
    expect(page.text).toBe('app /hello?x=1');
    // On the preview host every path is the app's: the operator API is not reachable through it.
    expect((await onHost(hostOf(3000), '/api/sandboxes', cookie)).text).toBe('app /api/sandboxes');
    // Not another port of the sandbox, not another sandbox, not by a guessed token.
    expect((await onHost(hostOf(3001), '/', cookie)).status).toBe(401);
    expect((await onHost(hostOf(3000, `sbx-${'0'.repeat(32)}`), '/', cookie)).status).toBe(401);
    for (let i = 0; i < 5; i++) {
      const guess = `pl_${randomBytes(32).toString('base64url')}`;
      expect((await onHost(hostOf(3000), `/__asb_link?t=${guess}`)).status).toBe(401);
      expect((await onHost(hostOf(3000), '/', `asb_link=${guess}`)).status).toBe(401);
    }
  }, 60_000);

  it('revoking a link ends an open WebSocket through it at once, and every later request', async () => {
    const link = await createLink(3001);
    const cookie = await openLink(link.url);
    const ws = await openWs(hostOf(3001), cookie);
    expect(ws.status).toBe(101);
    expect(await echo(ws.socket!, 'hmr ping')).toBe('hmr ping');
    const gone = closed(ws.socket!);
    const revoked = await call('DELETE', `/api/sandboxes/${id}/preview-links/${link.id}`, owner);
    expect(revoked.status).toBe(200);
    expect(revoked.json.state).toBe('revoked');
    await gone;
    expect((await onHost(hostOf(3001), '/', cookie)).status).toBe(401);
    expect((await openWs(hostOf(3001), cookie)).status).toBe(401);
    const u = new URL(link.url);
    expect((await onHost(u.host, `${u.pathname}${u.search}`)).status).toBe(401);
    // Another wallet's or a member's revoke: 403; an unknown link: 404.
    expect((await call('DELETE', `/api/sandboxes/${id}/preview-links/${link.id}`, member)).status).toBe(403);
    expect(
      (await call('DELETE', `/api/sandboxes/${id}/preview-links/pl-${'0'.repeat(16)}`, owner)).status,
    ).toBe(404);
  }, 60_000);

  it('a link expires on time: its open WebSocket ends then, later requests are refused', async () => {
    const link = await createLink(3001, { expires_in_seconds: 2 });
    const cookie = await openLink(link.url);
    const ws = await openWs(hostOf(3001), cookie);
    expect(ws.status).toBe(101);
    expect(await echo(ws.socket!, 'still here')).toBe('still here');
    await closed(ws.socket!);
    // The connection was ended by the expiry, not before it.
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(link.expires_at) - 5);
    expect((await onHost(hostOf(3001), '/', cookie)).status).toBe(401);
    const listed = await call('GET', `/api/sandboxes/${id}/preview-links`, owner);
    expect(listed.json.links.find((l: { id: string }) => l.id === link.id).state).toBe('expired');
  }, 30_000);

  it('a link is rate-limited on its own, whoever uses it', async () => {
    const link = await createLink(3000);
    const cookie = await openLink(link.url);
    const statuses: number[] = [];
    for (let i = 0; i < PER_LINK_PER_MINUTE + 3; i++)
      statuses.push((await onHost(hostOf(3000), '/', cookie)).status);
    expect(statuses.slice(0, PER_LINK_PER_MINUTE)).toEqual(Array(PER_LINK_PER_MINUTE).fill(200));
    expect(statuses.at(-1)).toBe(429);
    // Another link to the same port has its own budget.
    const fresh = await openLink((await createLink(3000)).url);
    expect((await onHost(hostOf(3000), '/', fresh)).status).toBe(200);
  }, 60_000);

  it('members and links survive an operator restart; a removed member stays out', async () => {
    await call('DELETE', `/api/sandboxes/${id}/members/${member.address}`, owner);
    await call('POST', `/api/sandboxes/${id}/members`, owner, { address: later.address });
    const link = await createLink(3000);
    const cookie = await openLink(link.url);

    await server.close();
    await rig.reopen();
    await rig.manager.reconcile();
    ({ api, server } = await start());
    for (const a of [owner, member, later]) await signIn(a);

    expect((await call('GET', `/api/sandboxes/${id}/members`, owner)).json.members).toEqual([
      later.address.toLowerCase(),
    ]);
    const r = await exec(later, 'cat /home/agent/hello.txt');
    expect(r.status).toBe(200);
    expect(r.json.stdout).toBe('shared\n');
    expect((await exec(member, 'true')).status).toBe(403);
    const team = await call('GET', '/api/sandboxes?scope=team', later);
    expect(team.json.sandboxes.map((s: { id: string; role: string }) => [s.id, s.role])).toEqual([
      [id, 'member'],
    ]);
    expect((await call('GET', '/api/sandboxes?scope=personal', owner)).json.sandboxes).toEqual([]);

    const deadline = Date.now() + 20_000;
    let page = await onHost(hostOf(3000), '/', cookie);
    while (page.status === 502 && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 200));
      page = await onHost(hostOf(3000), '/', cookie);
    }
    expect(page.status).toBe(200);
    expect(api.config.previewLinks.enabled).toBe(true);
  }, 120_000);
});
