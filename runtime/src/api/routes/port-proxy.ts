// Reverse proxy to a port the sandbox exposed: `ANY …/port/{port}/{*rest}` → 127.0.0.1:<host port>/{rest}.
// Supported: plain HTTP/1.1 requests and responses of any method, streamed both ways (SSE and
// chunked bodies work). Not supported: WebSocket upgrades, HTTP/2, TLS to the sandbox.
import { type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import { errors } from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

// Hop-by-hop headers (RFC 9110 §7.6.1) and the caller's operator credentials never cross the proxy.
const DROP_REQUEST = new Set([
  'authorization',
  'cookie',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);
// Every sandbox's app is served from the operator's one origin: a sandbox must not set cookies
// there, and its pages run as an opaque origin (CSP sandbox) so they cannot read the operator
// origin's storage (where a web client may keep its session) or another sandbox's pages.
const DROP_RESPONSE = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'trailer',
  'upgrade',
  'content-length',
  'set-cookie',
  'content-security-policy',
]);
const SANDBOXED_CSP = 'sandbox allow-scripts allow-forms allow-popups allow-downloads';

export function registerPortProxy(app: OpenAPIHono<ApiEnv>, d: SandboxRouteDeps): void {
  app.openAPIRegistry.registerPath({
    method: 'get',
    path: '/port/{port}/{rest}',
    tags: ['sandbox'],
    summary: 'Reverse proxy (any method) to a port the sandbox exposed; HTTP/1.1, streamed, no WebSocket',
    security: [{ bearer: [] }],
    request: { params: z.object({ port: z.string(), rest: z.string() }) },
    responses: {
      200: { description: "The sandbox app's response" },
      ...errors(...[400, 401, 403, 404, 409, 429, 502, 504]),
    },
  });

  const handler = async (c: Context<ApiEnv>) => {
    const record = c.get('sandbox');
    if (record.state !== 'running') {
      throw new RuntimeError(
        record.state === 'stopped' ? 'SANDBOX_STOPPED' : 'SANDBOX_NOT_RUNNING',
        `sandbox is ${record.state}`,
      );
    }
    if (record.sidecarUrl?.startsWith('unix:')) {
      throw new RuntimeError(
        'CONFLICT',
        'this sandbox has no network: SANDBOX_EGRESS=none; it has no ports to proxy',
      );
    }
    const port = Number(c.req.param('port'));
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new RuntimeError('VALIDATION', 'port must be 1–65535');
    const exposed = d.sandboxes.exposedPort ? await d.sandboxes.exposedPort(record.id, port) : null;
    const hostPort = typeof exposed === 'object' ? exposed?.port : exposed;
    if (!hostPort) throw new RuntimeError('NOT_FOUND', `sandbox does not expose port ${port}`);

    const url = new URL(c.req.url);
    const marker = `/port/${c.req.param('port')}`;
    const rest = url.pathname.slice(url.pathname.indexOf(marker) + marker.length) || '/';
    const target = `http://127.0.0.1:${hostPort}${rest}${url.search}`;

    const headers = new Headers();
    for (const [k, v] of c.req.raw.headers) if (!DROP_REQUEST.has(k)) headers.set(k, v);
    headers.set('x-request-id', c.get('requestId'));
    headers.set('x-forwarded-prefix', url.pathname.slice(0, url.pathname.indexOf(marker) + marker.length));

    // A deadline for the response headers only; the body then streams as long as it lasts.
    const abort = new AbortController();
    const onClientGone = () => abort.abort();
    c.req.raw.signal.addEventListener('abort', onClientGone, { once: true });
    const timer = setTimeout(() => abort.abort(), d.config.timeouts.default);
    let upstream: Response;
    try {
      const hasBody = !['GET', 'HEAD'].includes(c.req.method);
      upstream = await fetch(target, {
        method: c.req.method,
        headers,
        body: hasBody ? c.req.raw.body : undefined,
        redirect: 'manual',
        signal: abort.signal,
        ...(hasBody ? { duplex: 'half' } : {}),
      } as RequestInit);
    } catch (e) {
      if (abort.signal.aborted && !c.req.raw.signal.aborted) {
        throw new RuntimeError('SIDECAR_TIMEOUT', `port ${port} did not answer in time`, { cause: e });
      }
      throw new RuntimeError('SIDECAR_ERROR', `port ${port} is not answering`, { cause: e });
    } finally {
      clearTimeout(timer);
    }
    const out = new Headers();
    for (const [k, v] of upstream.headers) if (!DROP_RESPONSE.has(k)) out.append(k, v);
    out.set('content-security-policy', SANDBOXED_CSP);
    return new Response(upstream.body, { status: upstream.status, headers: out });
  };

  app.all('/port/:port/*', handler);
  app.all('/port/:port', handler);
}
