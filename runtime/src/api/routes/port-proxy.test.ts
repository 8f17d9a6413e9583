// The port proxy: any method to a port the sandbox exposed, streamed, operator credentials stripped.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';

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
    h.sandboxes.exposed.set(id, new Map([[3000, (app.address() as AddressInfo).port]]));
  });
  afterAll(async () => {
    assertNoLeaks(h, [], [o.token]);
    app.close();
    await h.close();
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
