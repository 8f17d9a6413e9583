// The port proxy: any method to a port the sandbox exposed, streamed, operator credentials stripped;
// bytes untouched (gzip), hop-by-hop headers dropped, WebSocket upgrades, strict port parsing.
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';
import { PROXY_APP_JS, wsRoundTrip } from '../testing/proxy-apps.ts';

describe('port proxy', () => {
  let h: Harness;
  let o: Awaited<ReturnType<Harness['newOwner']>>;
  let id: string;
  let app: Server;
  const seen: Array<{ method?: string; url?: string; auth?: string; body: string; prefix?: string }> = [];
  beforeAll(async () => {
    h = await startHarness({ config: { rateLimits: { write: 1000 } } });
    o = await h.newOwner();
    id = h.addSandbox(o.address).id;
    app = createServer(async (req, res) => {
      let body = '';
      for await (const c of req) body += c;
      seen.push({
        method: req.method,
        url: req.url,
        auth: req.headers.authorization,
        body,
        prefix: req.headers['x-forwarded-prefix'] as string,
      });
      res.writeHead(201, { 'content-type': 'text/plain', 'x-app': 'yes', 'set-cookie': 'sid=evil; Path=/' });
      res.end(`app saw ${req.method} ${req.url}`);
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    appPort = await startProxyApp();
    h.sandboxes.exposed.set(
      id,
      new Map([
        [3000, (app.address() as AddressInfo).port],
        [3001, appPort],
      ]),
    );
  });
  afterAll(async () => {
    assertNoLeaks(h, [], [o.token]);
    app.close();
    child?.kill();
    await h.close();
  });

  let child: ChildProcess | undefined;
  let appPort = 0;
  const startProxyApp = async () => {
    const file = join(tmpdir(), `proxy-app-${process.pid}.cjs`);
    await writeFile(file, PROXY_APP_JS);
    child = spawn(process.execPath, [file, '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    return new Promise<number>((res) => {
      child!.stdout!.once('data', (d: Buffer) => res((JSON.parse(d.toString()) as { port: number }).port));
    });
  };
  /** A raw GET through the operator (node:http: no decompression, no path normalisation). */
  const raw = (path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((res, rej) => {
      const req = request(`${h.url}${path}`, { headers: { authorization: `Bearer ${o.token}`, ...headers } });
      req.on('error', rej);
      req.on('response', async (r) => {
        const chunks: Buffer[] = [];
        for await (const c of r) chunks.push(c as Buffer);
        res({ status: r.statusCode ?? 0, headers: r.headers, body: Buffer.concat(chunks) });
      });
      req.end();
    });

  it('passes a gzip body through byte for byte, with its content-encoding', async () => {
    const r = await raw(`/api/sandboxes/${id}/port/3001/gz`, { 'accept-encoding': 'gzip' });
    expect(r.status).toBe(200);
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(Number(r.headers['content-length'])).toBe(r.body.length);
    expect(gunzipSync(r.body).toString()).toBe('compressible '.repeat(200));
    // fetch (which decompresses on its side) reads the same text.
    const f = await h.call('GET', `/api/sandboxes/${id}/port/3001/gz`, { token: o.token });
    expect(f.text).toBe('compressible '.repeat(200));
  });

  it('drops hop-by-hop headers both ways, including those the Connection header names', async () => {
    const r = await raw(`/api/sandboxes/${id}/port/3001/hdr`, {
      connection: 'keep-alive, x-private-hop',
      'x-private-hop': 'nope',
      te: 'trailers',
      'proxy-authorization': 'Basic eA==',
      'x-app-header': 'kept',
    });
    const seenByApp = JSON.parse(r.body.toString()) as { headers: Record<string, string> };
    expect(seenByApp.headers['x-app-header']).toBe('kept');
    for (const k of ['x-private-hop', 'te', 'proxy-authorization', 'authorization']) {
      expect(seenByApp.headers[k]).toBeUndefined();
    }
    expect(r.headers['x-hop']).toBeUndefined();
    expect(r.headers['keep-alive']).not.toBe('timeout=77'); // the app's, not the operator's own
  });

  it('proxies a WebSocket upgrade (echo), for the owner only', async () => {
    const url = `${h.url}/api/sandboxes/${id}/port/3001/hmr?token=x`;
    const ok = await wsRoundTrip(url, { authorization: `Bearer ${o.token}` }, 'hello through the proxy');
    expect(ok.status).toBe(101);
    expect(ok.echo).toBe('hello through the proxy');
    expect(ok.headers['x-echo-path']).toBe('/hmr?token=x');
    const anon = await wsRoundTrip(url, {}, 'x');
    expect(anon.status).toBe(401);
    expect(anon.echo).toBeUndefined();
    const stranger = await h.newOwner();
    const other = await wsRoundTrip(url, { authorization: `Bearer ${stranger.token}` }, 'x');
    expect(other.status).toBe(403);
    // An upgrade anywhere else in the API is refused at once (an SSE route would never end).
    const elsewhere = await wsRoundTrip(
      `${h.url}/api/sandboxes`,
      { authorization: `Bearer ${o.token}` },
      'x',
    );
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.echo).toBeUndefined();
  });

  it('parses the port strictly from the raw path; path tricks stay on the sandbox port', async () => {
    for (const bad of [
      '%33001',
      '03001',
      '3001.0',
      '+3001',
      '0x0bb9',
      '3001@127.0.0.1:1',
      '65536',
      '0',
      '',
    ]) {
      const r = await raw(`/api/sandboxes/${id}/port/${bad}/hdr`);
      expect([400, 404], `port segment "${bad}"`).toContain(r.status);
      expect(r.body.toString()).not.toContain('"headers"');
    }
    // A repeated /port/ is just the app's path.
    const twice = await raw(`/api/sandboxes/${id}/port/3001/port/3000/hdr`);
    expect(twice.status).toBe(200);
    expect(twice.body.toString()).toBe('app /port/3000/hdr');
    // Encoded dot segments reach the app verbatim on the same port.
    const dots = await raw(`/api/sandboxes/${id}/port/3001/hdr/..%2f..%2f4000`);
    expect((JSON.parse(dots.body.toString()) as { url: string }).url).toBe('/hdr/..%2f..%2f4000');
    // Plain `..` is resolved by URL parsing before routing: it can only land on another API route.
    const up = await raw(`/api/sandboxes/${id}/port/3001/../../port/4000/`);
    expect(up.status).toBe(404);
  });

  it('forwards method, path, query and body; returns status, headers and body; strips the bearer token', async () => {
    const r = await h.call('POST', `/api/sandboxes/${id}/port/3000/api/items?x=1`, {
      token: o.token,
      body: { a: 1 },
    });
    expect(r.status).toBe(201);
    expect(r.text).toBe('app saw POST /api/items?x=1');
    expect(r.headers.get('x-app')).toBe('yes');
    expect(r.headers.get('x-frame-options')).toBe('DENY');
    // The sandbox app cannot plant cookies on the operator origin and runs as an opaque origin.
    expect(r.headers.get('set-cookie')).toBeNull();
    expect(r.headers.get('content-security-policy')).toMatch(/^sandbox /);
    const last = seen.at(-1)!;
    expect(last.body).toBe('{"a":1}');
    expect(last.auth).toBeUndefined();
    expect(last.prefix).toBe(`/api/sandboxes/${id}/port/3000`);
    expect((await h.call('GET', `/api/sandboxes/${id}/port/3000`, { token: o.token })).text).toBe(
      'app saw GET /',
    );
  });

  it('errors: a port not exposed → 404; not a port → 400; stopped sandbox → 409', async () => {
    expect((await h.call('GET', `/api/sandboxes/${id}/port/4000/`, { token: o.token })).status).toBe(404);
    expect((await h.call('GET', `/api/sandboxes/${id}/port/99999/`, { token: o.token })).status).toBe(400);
    const stopped = h.addSandbox(o.address, { state: 'stopped' }).id;
    expect((await h.call('GET', `/api/sandboxes/${stopped}/port/3000/`, { token: o.token })).status).toBe(
      409,
    );
  });

  it('an exposed port with nothing listening → 502', async () => {
    const other = h.addSandbox(o.address).id;
    h.sandboxes.exposed.set(other, new Map([[3000, 1]]));
    expect((await h.call('GET', `/api/sandboxes/${other}/port/3000/`, { token: o.token })).status).toBe(502);
  });
});
