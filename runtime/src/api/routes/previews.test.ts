// Port previews: the cookie minted for one sandbox and port opens exactly that port's proxy path —
// not another port, not another sandbox, not other routes, not after it expires, not when forged.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PREVIEW_COOKIE, PreviewCredentials } from '../previews/preview-credentials.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';

describe('port previews', () => {
  let h: Harness;
  let short: Harness;
  let app: Server;
  let o: Awaited<ReturnType<Harness['newOwner']>>;
  let a: string;
  let b: string;
  const seenCookies: Array<string | undefined> = [];

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
    h = await startHarness();
    o = await h.newOwner();
    a = h.addSandbox(o.address).id;
    b = h.addSandbox(o.address).id;
    expose(h, a);
    expose(h, b);
    short = await startHarness({ config: { previewTtlMs: 1 } });
  });
  afterAll(async () => {
    assertNoLeaks(h, [], [o.token]);
    app.close();
    await h.close();
    await short.close();
  });

  const mint = async (hh: Harness, token: string, id: string, port: number) => {
    const r = await hh.call('POST', `/api/sandboxes/${id}/previews`, { token, body: { port } });
    const cookie = r.headers.get('set-cookie') ?? '';
    return { r, cookie, value: cookie.split(';')[0]! };
  };
  const open = (hh: Harness, path: string, cookie: string) =>
    fetch(`${hh.url}${path}`, { headers: { cookie } }).then(async (r) => ({
      status: r.status,
      text: await r.text(),
    }));

  it('sets an HttpOnly, SameSite=Strict cookie limited to the port path; the proxy accepts it there', async () => {
    const { r, cookie, value } = await mint(h, o.token, a, 3000);
    expect(r.status).toBe(200);
    expect(r.json.url).toBe(`/api/sandboxes/${a}/port/3000/`);
    expect(cookie).toContain(`Path=/api/sandboxes/${a}/port/3000/`);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).toMatch(/; Max-Age=600/);
    expect(cookie).not.toContain(o.token);
    const res = await open(h, `/api/sandboxes/${a}/port/3000/index.html?x=1`, value);
    expect(res).toEqual({ status: 200, text: 'preview of /index.html?x=1' });
    expect(seenCookies.at(-1)).toBeUndefined(); // the credential never reaches the sandbox app
  });

  it('refuses the cookie of port A on port B, on another sandbox, off the proxy, forged', async () => {
    const { value } = await mint(h, o.token, a, 3000);
    const before = seenCookies.length;
    for (const path of [
      `/api/sandboxes/${a}/port/3001/`,
      `/api/sandboxes/${b}/port/3000/`,
      `/api/sandboxes/${a}/port/30000/`,
    ]) {
      const res = await open(h, path, value);
      expect(res.status).toBe(401);
      expect(res.text).toContain('preview expired or not for this port');
    }
    for (const path of [`/api/sandboxes/${a}`, `/api/sandboxes/${a}/secrets`, `/api/sandboxes/${a}/files`]) {
      expect((await open(h, path, value)).status).toBe(401);
    }
    const [payload, mac] = value.slice(PREVIEW_COOKIE.length + 1).split('.');
    const forgedPayload = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), p: 3001 }),
    ).toString('base64url');
    const forged = `${PREVIEW_COOKIE}=${forgedPayload}.${mac}`;
    expect((await open(h, `/api/sandboxes/${a}/port/3001/`, forged)).status).toBe(401);
    expect(seenCookies.length).toBe(before); // nothing reached the app
  });

  it('refuses minting for another wallet’s sandbox (403) and for a port not exposed (404)', async () => {
    const other = await h.newOwner();
    expect((await mint(h, other.token, a, 3000)).r.status).toBe(403);
    const r = (await mint(h, o.token, a, 4444)).r;
    expect(r.status).toBe(404);
    expect(r.headers.get('set-cookie')).toBeNull();
    expect((await h.call('POST', `/api/sandboxes/${a}/previews`, { body: { port: 3000 } })).status).toBe(401);
  });

  it('refuses an expired cookie', async () => {
    const owner = await short.newOwner();
    const id = short.addSandbox(owner.address).id;
    expose(short, id);
    const { value } = await mint(short, owner.token, id, 3000);
    // The credential lives 1 ms here; let the clock pass it.
    await new Promise((r) => setTimeout(r, 5));
    expect((await open(short, `/api/sandboxes/${id}/port/3000/`, value)).status).toBe(401);
  });

  it('expires by its clock, and is bound to sandbox, port and key', () => {
    let now = 1_000;
    const p = new PreviewCredentials(60_000, () => now);
    const { value } = p.mint('sb1', 3000, '0xABC');
    expect(p.verify(value, 'sb1', 3000)).toBe('0xabc');
    expect(p.verify(value, 'sb1', 3001)).toBeUndefined();
    expect(p.verify(value, 'sb2', 3000)).toBeUndefined();
    expect(new PreviewCredentials(60_000, () => now).verify(value, 'sb1', 3000)).toBeUndefined();
    now += 60_000;
    expect(p.verify(value, 'sb1', 3000)).toBeUndefined();
  });
});
