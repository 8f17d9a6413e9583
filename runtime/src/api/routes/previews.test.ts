// Port previews, attacked by a hostile sandbox page and by a stolen or stale credential: a preview
// is served from its own host on the preview origin (never the console's origin), opened with a
// one-use ticket that becomes a host-only HttpOnly cookie for that sandbox port alone, which dies
// with the session that opened it. Cases marked "(failed before)" passed a preview where this
// now refuses it.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PREVIEW_COOKIE, PreviewCredentials } from '../previews/preview-credentials.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request to the operator with a chosen Host header (fetch may not set it). */
function onHost(
  hh: Harness,
  host: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<Raw> {
  const u = new URL(hh.url);
  const method = body === undefined ? 'GET' : 'POST';
  const h = body === undefined ? headers : { ...headers, 'content-type': 'application/json' };
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method, headers: { ...h, host } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => {
        text += d.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe('port previews', () => {
  let h: Harness;
  let app: Server;
  let o: Awaited<ReturnType<Harness['newOwner']>>;
  let a: string;
  let b: string;
  const seenCookies: Array<string | undefined> = [];
  const portOf = (hh: Harness) => new URL(hh.url).port;
  const hostOf = (hh: Harness, id: string, port: number) => `p${port}-${id}.localhost:${portOf(hh)}`;

  const expose = (hh: Harness, id: string) => {
    const port = (app.address() as AddressInfo).port;
    hh.sandboxes.exposed.set(
      id,
      new Map([
        [3000, port],
        [3001, port],
      ]),
    );
  };
  beforeAll(async () => {
    app = createServer((req, res) => {
      seenCookies.push(req.headers.cookie);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`preview of ${req.url}`);
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    h = await startHarness({ config: { rateLimits: { write: 1000, read: 1000, auth: 100 } } });
    o = await h.newOwner();
    a = h.addSandbox(o.address).id;
    b = h.addSandbox(o.address).id;
    expose(h, a);
    expose(h, b);
  });
  afterAll(async () => {
    assertNoLeaks(h, [], [o.token]);
    app.close();
    await h.close();
  });

  const mint = async (hh: Harness, token: string, id: string, port: number) =>
    hh.call('POST', `/api/sandboxes/${id}/previews`, { token, body: { port } });
  /** Mints, redeems the ticket on the preview host, and returns the cookie it set. */
  const openPreview = async (hh: Harness, token: string, id: string, port: number) => {
    const r = await mint(hh, token, id, port);
    const u = new URL(r.json.url);
    const redeemed = await onHost(hh, u.host, `${u.pathname}${u.search}`);
    const setCookie = String(redeemed.headers['set-cookie'] ?? '');
    return { r, u, redeemed, setCookie, cookie: setCookie.split(';')[0]! };
  };

  it("answers a one-use URL on the port's own host; the API origin sets no cookie", async () => {
    const r = await mint(h, o.token, a, 3000);
    expect(r.status).toBe(200);
    expect(r.headers.get('set-cookie')).toBeNull();
    const u = new URL(r.json.url);
    expect(u.origin).toBe(`http://${hostOf(h, a, 3000)}`);
    expect(r.json.origin).toBe(u.origin);
    expect(u.pathname).toBe('/__asb_preview');
    expect(r.text).not.toContain(o.token);
  });

  it('the ticket becomes a host-only HttpOnly cookie once; the preview host proxies the whole path', async () => {
    const { redeemed, setCookie, cookie, u } = await openPreview(h, o.token, a, 3000);
    expect(redeemed.status).toBe(303);
    expect(redeemed.headers.location).toBe('/');
    expect(setCookie).toMatch(/; Path=\/; /);
    expect(setCookie).toMatch(/; HttpOnly/);
    expect(setCookie).toMatch(/; SameSite=Lax/);
    expect(setCookie).not.toMatch(/Domain=/i);
    expect(Number(/Max-Age=(\d+)/.exec(setCookie)?.[1])).toBeLessThanOrEqual(600);
    // A replayed ticket URL (history, a log) opens nothing.
    expect((await onHost(h, u.host, `${u.pathname}${u.search}`)).status).toBe(401);
    const res = await onHost(h, hostOf(h, a, 3000), '/index.html?x=1', { cookie });
    expect(res).toMatchObject({ status: 200, text: 'preview of /index.html?x=1' });
    expect(res.headers['content-security-policy']).toMatch(/^sandbox /);
    expect(seenCookies.at(-1)).toBeUndefined(); // the credential never reaches the sandbox app
  });

  it("(failed before) the console's origin serves no sandbox bytes for a cookie: the path proxy needs the Bearer header", async () => {
    const { cookie } = await openPreview(h, o.token, a, 3000);
    const before = seenCookies.length;
    const viaCookie = await fetch(`${h.url}/api/sandboxes/${a}/port/3000/x.js`, { headers: { cookie } });
    expect(viaCookie.status).toBe(401);
    expect(seenCookies.length).toBe(before);
    const bearer = await h.call('GET', `/api/sandboxes/${a}/port/3000/x.js`, { token: o.token });
    expect(bearer.text).toBe('preview of /x.js');
  });

  it("refuses the cookie of one port on another port's or sandbox's host, a forged one, and any API route", async () => {
    const { cookie } = await openPreview(h, o.token, a, 3000);
    const before = seenCookies.length;
    for (const host of [hostOf(h, a, 3001), hostOf(h, b, 3000)]) {
      const res = await onHost(h, host, '/', { cookie });
      expect(res.status).toBe(401);
      expect(res.text).toContain('open it again from the console');
    }
    // The preview host serves nothing of the API or the console.
    for (const path of ['/api/sandboxes', `/api/sandboxes/${a}/secrets`, '/console/', '/health']) {
      expect((await onHost(h, hostOf(h, a, 3000), path)).status, path).toBe(401);
    }
    const [payload, mac] = cookie.slice(PREVIEW_COOKIE.length + 1).split('.');
    const forgedPayload = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), p: 3001 }),
    ).toString('base64url');
    const forged = `${PREVIEW_COOKIE}=${forgedPayload}.${mac}`;
    expect((await onHost(h, hostOf(h, a, 3001), '/', { cookie: forged })).status).toBe(401);
    expect(seenCookies.length).toBe(before); // nothing reached the app
  });

  it('(failed before) signing out closes the preview at once', async () => {
    const owner = await h.newOwner();
    const id = h.addSandbox(owner.address).id;
    expose(h, id);
    const { cookie } = await openPreview(h, owner.token, id, 3000);
    expect((await onHost(h, hostOf(h, id, 3000), '/', { cookie })).status).toBe(200);
    // A ticket minted before sign-out cannot be redeemed after it either.
    const pending = new URL((await mint(h, owner.token, id, 3000)).json.url);
    expect((await h.call('DELETE', '/api/auth/session', { token: owner.token })).status).toBe(200);
    const after = await onHost(h, hostOf(h, id, 3000), '/', { cookie });
    expect(after.status).toBe(401);
    expect((await onHost(h, pending.host, `${pending.pathname}${pending.search}`)).status).toBe(401);
  });

  it('refuses minting for another wallet’s sandbox (403), a port not exposed (404), no session (401)', async () => {
    const other = await h.newOwner();
    expect((await mint(h, other.token, a, 3000)).status).toBe(403);
    expect((await mint(h, o.token, a, 4444)).status).toBe(404);
    expect((await h.call('POST', `/api/sandboxes/${a}/previews`, { body: { port: 3000 } })).status).toBe(401);
  });

  it('PREVIEW_ORIGIN names the hosts; without it an operator reached on a public name refuses previews', async () => {
    const hh = await startHarness({ config: { previewOrigin: 'https://*.preview.example.com' } });
    try {
      const owner = await hh.newOwner();
      const id = hh.addSandbox(owner.address).id;
      expose(hh, id);
      const r = await mint(hh, owner.token, id, 3000);
      expect(new URL(r.json.url).origin).toBe(`https://p3000-${id}.preview.example.com`);
      const u = new URL(r.json.url);
      const redeemed = await onHost(hh, u.host, `${u.pathname}${u.search}`);
      expect(String(redeemed.headers['set-cookie'])).toMatch(/; Secure/);
      const cookie = String(redeemed.headers['set-cookie']).split(';')[0]!;
      expect((await onHost(hh, u.host, '/', { cookie })).text).toBe('preview of /');
      // The loopback default is off once a preview origin is configured.
      const local = await onHost(hh, `p3000-${id}.localhost:${portOf(hh)}`, '/', { cookie });
      expect(local.text).not.toContain('preview of');
    } finally {
      await hh.close();
    }
    const named = await startHarness();
    try {
      const owner = await named.newOwner();
      const id = named.addSandbox(owner.address).id;
      expose(named, id);
      const r = await onHost(
        named,
        `operator.example.com:${portOf(named)}`,
        `/api/sandboxes/${id}/previews`,
        { authorization: `Bearer ${owner.token}` },
        { port: 3000 },
      );
      expect(r.status).toBe(409);
      expect(r.text).toContain('PREVIEW_ORIGIN');
    } finally {
      await named.close();
    }
  });

  it('credentials: a ticket is not a cookie, both expire by their clock and are bound to sandbox, port, key', () => {
    let now = 1_000;
    const p = new PreviewCredentials(60_000, () => now);
    const g = { sandboxId: 'sb1', port: 3000, owner: '0xABC', jti: 'j1', expiresAt: now + 60_000 };
    const ticket = p.mint('ticket', g).value;
    const cookie = p.mint('cookie', g).value;
    expect(p.verify('cookie', ticket, 'sb1', 3000)).toBeUndefined();
    expect(p.verify('ticket', cookie, 'sb1', 3000)).toBeUndefined();
    expect(p.verify('cookie', cookie, 'sb1', 3000)).toMatchObject({ owner: '0xabc', jti: 'j1' });
    expect(p.verify('cookie', cookie, 'sb1', 3001)).toBeUndefined();
    expect(p.verify('cookie', cookie, 'sb2', 3000)).toBeUndefined();
    expect(new PreviewCredentials(60_000, () => now).verify('cookie', cookie, 'sb1', 3000)).toBeUndefined();
    expect(p.redeem(ticket, 'sb1', 3000)).toBeDefined();
    expect(p.redeem(ticket, 'sb1', 3000)).toBeUndefined();
    now += 60_000;
    expect(p.verify('cookie', cookie, 'sb1', 3000)).toBeUndefined();
  });
});
