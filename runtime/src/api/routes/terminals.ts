// Terminals: the sidecar's PTYs, proxied. Streams pass through as the sidecar writes them.
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { ApiEnv } from '../context.ts';
import { assertRunning } from '../middleware/session.ts';
import {
  errors,
  json,
  jsonBody,
  PassThroughSchema,
  SANDBOX_ERRORS,
  TerminalCreateSchema,
  TerminalInputSchema,
  TerminalParamsSchema,
  TerminalResizeSchema,
} from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

const KEEPALIVE_MS = 15_000;
const T_ERRORS = errors(400, ...SANDBOX_ERRORS, 409, 502, 503, 504);
const sec = [{ bearer: [] }];
const params = TerminalParamsSchema;

const routes = {
  create: createRoute({
    method: 'post',
    path: '/terminals',
    tags: ['terminals'],
    summary: 'Open a PTY',
    security: sec,
    request: { body: jsonBody(TerminalCreateSchema) },
    responses: { 200: json(PassThroughSchema, 'The terminal'), ...T_ERRORS },
  }),
  list: createRoute({
    method: 'get',
    path: '/terminals',
    tags: ['terminals'],
    summary: 'List PTYs',
    security: sec,
    responses: { 200: json(PassThroughSchema, 'Terminals'), ...T_ERRORS },
  }),
  get: createRoute({
    method: 'get',
    path: '/terminals/{tid}',
    tags: ['terminals'],
    summary: 'One PTY',
    security: sec,
    request: { params },
    responses: { 200: json(PassThroughSchema, 'The terminal'), ...T_ERRORS },
  }),
  resize: createRoute({
    method: 'patch',
    path: '/terminals/{tid}',
    tags: ['terminals'],
    summary: 'Resize a PTY',
    security: sec,
    request: { params, body: jsonBody(TerminalResizeSchema) },
    responses: { 200: json(PassThroughSchema, 'Resized'), ...T_ERRORS },
  }),
  remove: createRoute({
    method: 'delete',
    path: '/terminals/{tid}',
    tags: ['terminals'],
    summary: 'Close a PTY',
    security: sec,
    request: { params },
    responses: { 200: json(PassThroughSchema, 'Closed'), ...T_ERRORS },
  }),
  input: createRoute({
    method: 'post',
    path: '/terminals/{tid}/input',
    tags: ['terminals'],
    summary: 'Write to a PTY',
    security: sec,
    request: { params, body: jsonBody(TerminalInputSchema) },
    responses: { 200: json(PassThroughSchema, 'Written'), ...T_ERRORS },
  }),
  stream: createRoute({
    method: 'get',
    path: '/terminals/{tid}/stream',
    tags: ['terminals'],
    summary: "A PTY's output as SSE (`data: {type:'data.stdout', properties:{text}}`)",
    security: sec,
    request: { params },
    responses: {
      200: { content: { 'text/event-stream': { schema: z.string() } }, description: 'PTY output' },
      ...T_ERRORS,
    },
  }),
};

type Client = Awaited<ReturnType<SandboxRouteDeps['sidecars']['client']>>;

export function registerTerminals(app: OpenAPIHono<ApiEnv>, d: SandboxRouteDeps): void {
  // Errors come back from the SidecarClient already mapped (404 SESSION_NOT_FOUND, 409, 502, 504…).
  async function call(
    c: Context<ApiEnv>,
    op: (client: Client, o: { requestId: string }) => Promise<unknown>,
  ) {
    const record = c.get('sandbox');
    assertRunning(record);
    const client = await d.sidecars.client(record.id);
    const body = await op(client, { requestId: c.get('requestId') });
    return c.json(rewriteStreamUrl(body, c.req.path) as Record<string, unknown>, 200);
  }

  // The sidecar's streamUrl is a path on the sidecar; the caller needs this API's path.
  function rewriteStreamUrl(body: unknown, reqPath: string): unknown {
    const base = reqPath.replace(/\/terminals(\/.*)?$/, '/terminals');
    const fix = (o: unknown) => {
      if (o && typeof o === 'object' && typeof (o as Record<string, unknown>).streamUrl === 'string') {
        const id = /\/terminals\/([^/]+)\/stream/.exec((o as Record<string, string>).streamUrl!)?.[1];
        if (id) (o as Record<string, string>).streamUrl = `${base}/${id}/stream`;
      }
    };
    fix(body);
    fix((body as { data?: unknown } | undefined)?.data);
    return body;
  }

  app.openapi(routes.create, (c) => call(c, (s, o) => s.createTerminal(c.req.valid('json'), o)) as never);
  app.openapi(routes.list, (c) => call(c, (s, o) => s.listTerminals(o)) as never);
  app.openapi(routes.get, (c) => call(c, (s, o) => s.getTerminal(c.req.valid('param').tid, o)) as never);
  app.openapi(
    routes.resize,
    (c) => call(c, (s, o) => s.resizeTerminal(c.req.valid('param').tid, c.req.valid('json'), o)) as never,
  );
  app.openapi(
    routes.remove,
    (c) => call(c, (s, o) => s.deleteTerminal(c.req.valid('param').tid, o)) as never,
  );
  app.openapi(
    routes.input,
    (c) => call(c, (s, o) => s.terminalInput(c.req.valid('param').tid, c.req.valid('json').data, o)) as never,
  );

  app.openapi(routes.stream, async (c) => {
    const record = c.get('sandbox');
    assertRunning(record);
    const client = await d.sidecars.client(record.id);
    const tid = c.req.valid('param').tid;
    // A missing terminal is a 404 here, not an empty stream (a PTY may stay silent for long).
    await client.getTerminal(tid, { requestId: c.get('requestId') });
    const abort = new AbortController();
    const events = client.streamTerminal(tid, { requestId: c.get('requestId'), signal: abort.signal });
    // A member removed while watching the PTY stops receiving it at once (live-access.ts).
    const release = d.live.hold({ sandboxId: record.id, address: c.get('session').address }, () =>
      abort.abort(),
    );
    return streamSSE(c, async (stream) => {
      stream.onAbort(() => abort.abort());
      const keepalive = setInterval(() => void stream.write(': keep-alive\n\n'), KEEPALIVE_MS);
      try {
        // Each PTY frame is written on as soon as it arrives: nothing is collected first.
        for await (const ev of events) {
          await stream.writeSSE({ data: ev.data, ...(ev.event ? { event: ev.event } : {}) });
        }
      } catch (e) {
        if (!abort.signal.aborted)
          c.get('log').info({ code: (e as { code?: string }).code }, 'terminal stream ended');
      } finally {
        clearInterval(keepalive);
        abort.abort();
        release();
      }
    }) as never;
  });
}
