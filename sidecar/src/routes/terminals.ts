// /terminals routes: create, list, get, SSE stream (raw or JSON frames), input, execute, resize, delete.
import type { SidecarConfig } from '../config.ts';
import { type Handler, ok, parseBody, type Router, STREAMED } from '../http/http-router.ts';
import { openSse } from '../http/sse.ts';
import * as z from '../schema.ts';
import type { TerminalRegistry } from '../terminals/terminal-registry.ts';
import { resolveCwd } from './exec.ts';
import { refusePlatformOwned } from './user-env.ts';

const Size = z.int().check(z.minimum(1), z.maximum(1000));
const CreateBody = z.object({
  cwd: z.optional(z.string().check(z.minLength(1))),
  cols: z._default(Size, 80),
  rows: z._default(Size, 24),
  env: z.optional(z.record(z.string(), z.string())),
  title: z.optional(z.string().check(z.maxLength(200))),
});
const InputBody = z.object({ data: z.string() });
const ExecuteBody = z.object({ command: z.string() });
const ResizeBody = z.object({ cols: Size, rows: Size });

export function addTerminalRoutes(router: Router, config: SidecarConfig, terminals: TerminalRegistry): void {
  const create: Handler = async (ctx) => {
    const body = parseBody(CreateBody, await ctx.body());
    refusePlatformOwned(body.env);
    const cwd = await resolveCwd(config, body.cwd);
    const s = terminals.create({ ...body, cwd });
    ctx.log.info({ sessionId: s.id }, 'terminal created');
    const sum = s.summary();
    return ok({
      success: true,
      sessionId: s.id,
      data: {
        sessionId: s.id,
        shell: sum.shell,
        cwd,
        cols: sum.cols,
        rows: sum.rows,
        streamUrl: sum.streamUrl,
      },
    });
  };

  const stream: Handler = (ctx) => {
    const session = terminals.get(ctx.params['id']!);
    // With ?token= (EventSource clients) frames are raw text; otherwise typed JSON frames.
    const raw = ctx.query.has('token');
    const sse = openSse(ctx.res, config.sseKeepAliveMs);
    const unsubscribe = session.subscribe((ev) => {
      if (ev.type === 'data') {
        sse.send(raw ? ev.text : JSON.stringify({ type: 'data.stdout', properties: { text: ev.text } }));
      } else {
        if (!raw) sse.send(JSON.stringify({ type: 'session.exited', properties: { exitCode: ev.exitCode } }));
        sse.close();
      }
    });
    sse.onClose(unsubscribe);
    return STREAMED;
  };

  router
    .add('POST', '/terminals', create)
    .add('GET', '/terminals', () => ok({ success: true, data: terminals.list().map((s) => s.summary()) }))
    .add('GET', '/terminals/:id', (ctx) =>
      ok({ success: true, data: terminals.get(ctx.params['id']!).summary() }),
    )
    .add('GET', '/terminals/:id/stream', stream, { sse: true })
    .add('POST', '/terminals/:id/input', async (ctx) => {
      const session = terminals.get(ctx.params['id']!);
      session.write(parseBody(InputBody, await ctx.body()).data);
      return ok({ success: true });
    })
    .add('POST', '/terminals/:id/execute', async (ctx) => {
      const session = terminals.get(ctx.params['id']!);
      session.write(`${parseBody(ExecuteBody, await ctx.body()).command}\n`);
      return ok({ success: true });
    })
    .add('PATCH', '/terminals/:id', async (ctx) => {
      const session = terminals.get(ctx.params['id']!);
      const { cols, rows } = parseBody(ResizeBody, await ctx.body());
      session.resize(cols, rows);
      return ok({ success: true, data: session.summary() });
    })
    .add('DELETE', '/terminals/:id', (ctx) => {
      const id = ctx.params['id']!;
      terminals.delete(id);
      ctx.log.info({ sessionId: id }, 'terminal deleted');
      return ok({ deleted: true, sessionId: id });
    });
}
