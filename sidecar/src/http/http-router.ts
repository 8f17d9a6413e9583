// A small router on plain node:http (Node 18 in the image): routes, JSON bodies, one error shape, request ids.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { errorBody, SidecarError } from '../errors.ts';
import type * as z from '../schema.ts';
import type { BearerAuth } from './auth.ts';

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  query: URLSearchParams;
  requestId: string;
  log: Logger;
  /** The parsed JSON body (`{}` when empty); 400 INVALID_JSON when it does not parse. */
  body(): Promise<unknown>;
}

/** A JSON reply, or `STREAMED` when the handler wrote the response itself (SSE). */
export type Reply = { status?: number; body: unknown } | typeof STREAMED;
export const STREAMED: unique symbol = Symbol('streamed');
export type Handler = (ctx: RequestContext) => Promise<Reply> | Reply;

interface Route {
  method: string;
  parts: string[];
  handler: Handler;
  /** false: open; true: the router's auth; a BearerAuth: that credential instead (TEE mode). */
  auth: boolean | BearerAuth;
  sse: boolean;
}

export const ok = (body: unknown, status = 200): Reply => ({ status, body });

/** Validates a body with one schema; every issue becomes a 400 with `code`. */
export function parseBody<T extends z.ZodMiniType>(schema: T, body: unknown): z.infer<T> {
  const r = schema.safeParse(body);
  if (!r.success) {
    const msg = r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
    throw new SidecarError('INVALID_REQUEST', `invalid request body: ${msg}`, 400);
  }
  return r.data;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function readBody(req: IncomingMessage, limit: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (c: Buffer) => {
      if (failed) return;
      size += c.length;
      if (size > limit) {
        failed = true;
        reject(new SidecarError('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`, 413));
        return;
      }
      chunks.push(c);
    });
    req.on('error', (err) => reject(err));
    req.on('end', () => {
      if (failed) return;
      const text = Buffer.concat(chunks).toString('utf8').trim();
      if (!text) return resolve({});
      try {
        resolve(JSON.parse(text));
      } catch (err) {
        reject(
          new SidecarError('INVALID_JSON', `request body is not valid JSON: ${(err as Error).message}`, 400),
        );
      }
    });
  });
}

export class Router {
  readonly #routes: Route[] = [];
  constructor(
    private readonly auth: BearerAuth,
    private readonly log: Logger,
    private readonly maxBodyBytes: number,
  ) {}

  /** Every route as added (`method`, `path`): what sidecar/API.md documents. */
  get routes(): Array<{ method: string; path: string }> {
    return this.#routes.map((r) => ({ method: r.method, path: `/${r.parts.join('/')}` }));
  }

  add(
    method: string,
    path: string,
    handler: Handler,
    opts: { auth?: boolean | BearerAuth; sse?: boolean } = {},
  ): this {
    this.#routes.push({
      method,
      parts: path.split('/').filter(Boolean),
      handler,
      auth: opts.auth ?? true,
      sse: opts.sse ?? false,
    });
    return this;
  }

  #match(
    method: string,
    pathname: string,
  ): { route: Route; params: Record<string, string> } | 'wrong-method' | undefined {
    const parts = pathname.split('/').filter(Boolean);
    let pathMatched = false;
    for (const route of this.#routes) {
      if (route.parts.length !== parts.length) continue;
      const params: Record<string, string> = {};
      let hit = true;
      for (let i = 0; i < parts.length; i++) {
        const want = route.parts[i]!;
        const got = parts[i]!;
        if (want.startsWith(':')) {
          try {
            params[want.slice(1)] = decodeURIComponent(got);
          } catch {
            hit = false;
            break;
          }
        } else if (want !== got) {
          hit = false;
          break;
        }
      }
      if (!hit) continue;
      pathMatched = true;
      if (route.method === method) return { route, params };
    }
    return pathMatched ? 'wrong-method' : undefined;
  }

  /** The node:http request listener. Never throws; every failure becomes the JSON error shape. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('x-request-id', requestId);
    const url = new URL(req.url ?? '/', 'http://sidecar');
    // Only the path is logged: the query may carry `?token=`.
    const log = this.log.child({ reqId: requestId, method: req.method, path: url.pathname });
    res.on('finish', () => {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      if (url.pathname === '/health') log.debug({ status: res.statusCode, ms }, 'request');
      else log.info({ status: res.statusCode, ms }, 'request');
    });
    this.#dispatch(req, res, url, requestId, log).catch((err: unknown) => {
      const e =
        err instanceof SidecarError
          ? err
          : new SidecarError('INTERNAL', `internal error: ${(err as Error)?.message ?? String(err)}`, 500);
      if (e.status >= 500) log.error({ err, code: e.code }, 'request failed');
      if (res.headersSent) {
        res.end();
        return;
      }
      sendJson(res, e.status, errorBody(e.code, e.message));
    });
  };

  async #dispatch(req: IncomingMessage, res: ServerResponse, url: URL, requestId: string, log: Logger) {
    const m = this.#match(req.method ?? 'GET', url.pathname);
    if (m === undefined) throw new SidecarError('NOT_FOUND', `no route ${req.method} ${url.pathname}`, 404);
    if (m === 'wrong-method') {
      throw new SidecarError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${url.pathname}`, 405);
    }
    if (m.route.auth === true) this.auth.check(req, url.searchParams, m.route.sse);
    else if (m.route.auth) m.route.auth.check(req, url.searchParams, m.route.sse);
    let bodyPromise: Promise<unknown> | undefined;
    const ctx: RequestContext = {
      req,
      res,
      params: m.params,
      query: url.searchParams,
      requestId,
      log,
      body: () => {
        bodyPromise ??= readBody(req, this.maxBodyBytes);
        return bodyPromise;
      },
    };
    const reply = await m.route.handler(ctx);
    if (reply === STREAMED) return;
    sendJson(res, reply.status ?? 200, reply.body);
  }
}
