// Reverse proxy to a port the sandbox exposed: `ANY …/port/{port}/{*rest}` → 127.0.0.1:<host port>/{rest}.
// - The host port is the sandbox's live mapping (SandboxManager.exposedPort inspects the container).
// - Bytes pass untouched both ways (node:http, no decompression: a gzip body keeps its
//   content-encoding and arrives byte for byte), streamed (SSE and chunked bodies work).
// - WebSocket upgrades are proxied (serve.ts hands the upgrade socket in; see upgradeSocket).
// - Hop-by-hop headers (RFC 9110 §7.6.1, plus any the Connection header names) are dropped.
// - The port is read from the raw path, strictly: decimal digits 1–65535, nothing else.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { RuntimeError } from '../../errors.ts';
import type { SandboxRecord } from '../../sandbox/record.ts';
import type { ApiEnv } from '../context.ts';
import { errors } from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];
// The caller's operator credentials never cross the proxy; host and length are set per hop.
const DROP_REQUEST = new Set([...HOP_BY_HOP, 'authorization', 'cookie', 'host', 'content-length']);
// Every sandbox's app is served from the operator's one origin: a sandbox must not set cookies
// there, and its pages run as an opaque origin (CSP sandbox) so they cannot read the operator
// origin's storage (where a web client may keep its session) or another sandbox's pages.
const DROP_RESPONSE = new Set([...HOP_BY_HOP, 'set-cookie', 'content-security-policy']);
const SANDBOXED_CSP = 'sandbox allow-scripts allow-forms allow-popups allow-downloads';
// `/api/sandboxes/{id}/port/{port}{rest}` or `/api/sandbox/port/{port}{rest}`, on the raw path.
const ROUTE_RE = /^(\/api\/(?:sandboxes\/[^/]+|sandbox)\/port\/)([^/]*)(\/.*)?$/;

/** What serve.ts passes in the env of a request that asked to upgrade (WebSocket). */
export interface UpgradeEnv {
  socket: Duplex;
  head: Buffer;
  /** Set by the proxy once it took the socket over; serve.ts then writes nothing itself. */
  taken?: boolean;
}

/** The header names a Connection header lists, which are hop-by-hop too. */
function connectionTokens(value: string | string[] | null | undefined): Set<string> {
  const raw = Array.isArray(value) ? value.join(',') : (value ?? '');
  return new Set(
    raw
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
}

/** The container port and the path to forward, from the raw request path; VALIDATION otherwise. */
export function parsePortPath(pathname: string): { port: number; prefix: string; rest: string } {
  const m = ROUTE_RE.exec(pathname);
  const digits = m?.[2] ?? '';
  const port = /^[1-9]\d{0,4}$/.test(digits) ? Number(digits) : 0;
  if (!m || port < 1 || port > 65_535) {
    throw new RuntimeError('VALIDATION', 'port must be a decimal number 1–65535, as in …/port/3000/');
  }
  return { port, prefix: `${m[1]}${digits}`, rest: m[3] ?? '/' };
}

/** The upstream URL, checked to be exactly 127.0.0.1:<hostPort> whatever the path holds. */
export function upstreamUrl(hostPort: number, pathAndQuery: string): URL {
  const url = new URL(`http://127.0.0.1:${hostPort}${pathAndQuery}`);
  if (url.hostname !== '127.0.0.1' || url.port !== String(hostPort) || url.username || url.password) {
    throw new RuntimeError('VALIDATION', 'the proxied path must stay on the sandbox port');
  }
  return url;
}

export function registerPortProxy(app: OpenAPIHono<ApiEnv>, d: SandboxRouteDeps): void {
  app.openAPIRegistry.registerPath({
    method: 'get',
    path: '/port/{port}/{rest}',
    tags: ['sandbox'],
    summary:
      'Reverse proxy (any method, WebSocket upgrades too) to a port the sandbox exposed; bytes untouched, streamed',
    security: [{ bearer: [] }],
    request: { params: z.object({ port: z.string(), rest: z.string() }) },
    responses: {
      200: { description: "The sandbox app's response" },
      ...errors(...[400, 401, 403, 404, 409, 429, 502, 504]),
    },
  });

  const handler = async (c: Context<ApiEnv>) => {
    const raw = c.req.raw.url;
    const pathStart = raw.indexOf('/', raw.indexOf('//') + 2);
    const pathAndQuery = pathStart < 0 ? '/' : raw.slice(pathStart);
    const q = pathAndQuery.indexOf('?');
    const { port, prefix, rest } = parsePortPath(q < 0 ? pathAndQuery : pathAndQuery.slice(0, q));
    const search = q < 0 ? '' : pathAndQuery.slice(q);
    const grant = { sandboxId: c.get('sandbox').id, address: c.get('session').address };
    return proxyToPort(c, d, c.get('sandbox'), port, prefix, `${rest}${search}`, (end) =>
      d.live.hold(grant, end),
    );
  };

  app.all('/port/:port/*', handler);
  app.all('/port/:port', handler);
}

/**
 * Registers an open proxied exchange under the grant it was opened with (live-access.ts): `end`
 * cuts it (the caller's access was taken away); the returned release is called when it closes.
 */
export type HoldExchange = (end: () => void) => () => void;

const noHold: HoldExchange = () => () => {};

/**
 * Proxies the request to container port `port` of `record` (the caller was checked), forwarding
 * `pathAndQuery`; `prefix` is what the app sees as x-forwarded-prefix (empty on a preview host).
 */
export async function proxyToPort(
  c: Context<ApiEnv>,
  d: Pick<SandboxRouteDeps, 'sandboxes' | 'config'>,
  record: SandboxRecord,
  port: number,
  prefix: string,
  pathAndQuery: string,
  hold: HoldExchange = noHold,
): Promise<Response> {
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
  const exposed = d.sandboxes.exposedPort ? await d.sandboxes.exposedPort(record.id, port) : null;
  const hostPort = typeof exposed === 'object' ? exposed?.port : exposed;
  if (!hostPort) throw new RuntimeError('NOT_FOUND', `sandbox does not expose port ${port}`);
  const target = upstreamUrl(hostPort, pathAndQuery);

  const drop = connectionTokens(c.req.header('connection'));
  const headers: Record<string, string> = {};
  for (const [k, v] of c.req.raw.headers) if (!DROP_REQUEST.has(k) && !drop.has(k)) headers[k] = v;
  headers['x-request-id'] = c.get('requestId');
  if (prefix) headers['x-forwarded-prefix'] = prefix;

  const upgrade = (c.env as { upgrade?: UpgradeEnv } | undefined)?.upgrade;
  const wantsWs = c.req.header('upgrade')?.toLowerCase() === 'websocket';
  if (upgrade && wantsWs && c.req.method === 'GET') {
    return proxyUpgrade(target, headers, upgrade, d.config.timeouts.default, port, hold);
  }
  return proxyHttp(c, target, headers, d.config.timeouts.default, port, hold);
}

/** One HTTP exchange, bytes untouched; a deadline applies to the response headers only. */
function proxyHttp(
  c: Context<ApiEnv>,
  target: URL,
  headers: Record<string, string>,
  timeoutMs: number,
  port: number,
  hold: HoldExchange,
): Promise<Response> {
  const hasBody = !['GET', 'HEAD'].includes(c.req.method) && c.req.raw.body !== null;
  return new Promise<Response>((resolve, reject) => {
    let answered = false;
    const req = httpRequest(target, { method: c.req.method, headers, timeout: timeoutMs });
    // Access taken away mid-exchange: the upstream goes, and so does the rest of the response.
    const release = hold(() => req.destroy(new RuntimeError('FORBIDDEN', 'access to this port ended')));
    req.on('close', release);
    const onClientGone = () => req.destroy();
    c.req.raw.signal.addEventListener('abort', onClientGone, { once: true });
    req.on('timeout', () => {
      if (answered) return;
      req.destroy(new RuntimeError('SIDECAR_TIMEOUT', `port ${port} did not answer in time`));
    });
    req.on('error', (e) => {
      if (answered) return;
      reject(
        e instanceof RuntimeError
          ? e
          : new RuntimeError('SIDECAR_ERROR', `port ${port} is not answering`, { cause: e }),
      );
    });
    req.on('response', (res: IncomingMessage) => {
      answered = true;
      req.setTimeout(0);
      req.on('error', (e) => res.destroy(e));
      resolve(
        new Response(bodyOf(res, c.req.method), {
          status: res.statusCode ?? 502,
          headers: responseHeaders(res),
        }),
      );
    });
    if (hasBody) {
      const reader = c.req.raw.body!.getReader();
      const pump = async (): Promise<void> => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return void req.end();
          if (!req.write(value)) await new Promise((r) => req.once('drain', r));
        }
      };
      pump().catch((e: unknown) => req.destroy(e as Error));
    } else {
      req.end();
    }
  });
}

function responseHeaders(res: IncomingMessage): Headers {
  const drop = connectionTokens(res.headers.connection);
  const out = new Headers();
  for (let i = 0; i < res.rawHeaders.length; i += 2) {
    const k = res.rawHeaders[i]!.toLowerCase();
    if (!DROP_RESPONSE.has(k) && !drop.has(k) && k !== 'content-length')
      out.append(k, res.rawHeaders[i + 1]!);
  }
  // A known length is kept (HEAD and compressed bodies included): the bytes are not changed.
  if (res.headers['content-length'] !== undefined) out.set('content-length', res.headers['content-length']);
  out.set('content-security-policy', SANDBOXED_CSP);
  return out;
}

function bodyOf(res: IncomingMessage, method: string): ReadableStream<Uint8Array> | null {
  const status = res.statusCode ?? 0;
  if (method === 'HEAD' || status === 204 || status === 304) {
    res.resume();
    return null;
  }
  return new ReadableStream<Uint8Array>({
    start(controller) {
      res.on('data', (chunk: Buffer) => {
        controller.enqueue(new Uint8Array(chunk));
        if ((controller.desiredSize ?? 1) <= 0) res.pause();
      });
      res.on('end', () => controller.close());
      res.on('error', (e) => controller.error(e));
    },
    pull() {
      res.resume();
    },
    cancel() {
      res.destroy();
    },
  });
}

/**
 * A WebSocket upgrade: the same request goes upstream; on 101 the status line and headers go back
 * to the client and the two sockets are piped. Any other answer is returned as a normal response.
 */
function proxyUpgrade(
  target: URL,
  headers: Record<string, string>,
  up: UpgradeEnv,
  timeoutMs: number,
  port: number,
  hold: HoldExchange,
): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    const req = httpRequest(target, {
      method: 'GET',
      headers: { ...headers, connection: 'Upgrade', upgrade: 'websocket' },
      timeout: timeoutMs,
    });
    req.on('timeout', () =>
      req.destroy(new RuntimeError('SIDECAR_TIMEOUT', `port ${port} did not answer in time`)),
    );
    req.on('error', (e) =>
      reject(
        e instanceof RuntimeError
          ? e
          : new RuntimeError('SIDECAR_ERROR', `port ${port} is not answering`, { cause: e }),
      ),
    );
    req.on('response', (res) => {
      resolve(
        new Response(bodyOf(res, 'GET'), { status: res.statusCode ?? 502, headers: responseHeaders(res) }),
      );
    });
    req.on('upgrade', (res, upstream, upstreamHead) => {
      req.setTimeout(0);
      up.taken = true;
      const lines = [`HTTP/1.1 101 ${res.statusMessage || 'Switching Protocols'}`];
      for (let i = 0; i < res.rawHeaders.length; i += 2) {
        const k = res.rawHeaders[i]!.toLowerCase();
        if (k === 'set-cookie' || k === 'content-security-policy') continue;
        lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
      }
      up.socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (upstreamHead.length > 0) up.socket.write(upstreamHead);
      if (up.head.length > 0) upstream.write(up.head);
      upstream.pipe(up.socket);
      up.socket.pipe(upstream);
      let release = () => {};
      const close = () => {
        release();
        upstream.destroy();
        up.socket.destroy();
      };
      release = hold(close);
      upstream.on('error', close);
      up.socket.on('error', close);
      upstream.on('close', close);
      up.socket.on('close', close);
      resolve(new Response(null, { status: 204 }));
    });
    req.end();
  });
}
