// /agents routes: list (with which harness CLIs this image has), run (JSON), run/stream (SSE
// events), cancel.

import { AgentRunBody, type AgentRunner } from '../agents/agent-runner.ts';
import { AGENTS, assertInstalled, HARNESSES, harnessArgv } from '../agents/harness.ts';
import type { SidecarConfig } from '../config.ts';
import { SidecarError } from '../errors.ts';
import { childEnv } from '../exec/child-env.ts';
import { ok, parseBody, type Reply, type Router, STREAMED } from '../http/http-router.ts';
import { openSse } from '../http/sse.ts';
import * as z from '../schema.ts';
import { USER_AGENT_COMMAND_KEY } from '../user-env/user-env.ts';

/** The harnesses whose CLI is on the PATH an agent run sees (found, not assumed). */
function installedHarnesses(config: SidecarConfig): string[] {
  const path = childEnv(config)['PATH'];
  return HARNESSES.filter((h) => {
    try {
      assertInstalled(h, harnessArgv(h, 'x', {})[0]!, path);
      return true;
    } catch {
      return false;
    }
  });
}

const CancelBody = z.object({ sessionId: z.optional(z.string()) });

export function addAgentRoutes(router: Router, config: SidecarConfig, runner: AgentRunner): void {
  router
    .add('GET', '/agents', () =>
      ok({
        agents: AGENTS,
        count: AGENTS.length,
        installed: installedHarnesses(config),
        // When set, every run is this program, whatever agent the request names.
        agentCommand: !!(config.agentCommand ?? config.userEnv.current[USER_AGENT_COMMAND_KEY]),
      }),
    )
    .add('POST', '/agents/run', async (ctx) => {
      const req = parseBody(AgentRunBody, await ctx.body());
      const r = await runner.run(req);
      return ok({
        success: true,
        response: r.finalText,
        data: { finalText: r.finalText },
        traceId: r.traceId,
        durationMs: r.durationMs,
        sessionId: r.sessionId,
        harness: r.harness,
        model: r.model,
        usage: r.usage,
      });
    })
    .add(
      'POST',
      '/agents/run/stream',
      async (ctx): Promise<Reply> => {
        // Validation errors still answer as JSON 400, before the stream opens.
        const req = parseBody(AgentRunBody, await ctx.body());
        const sse = openSse(ctx.res, config.sseKeepAliveMs);
        const send = (event: string, data: unknown) => sse.send(JSON.stringify(data), event);
        // A client that goes away cancels its run: nobody would see the result.
        const abort = new AbortController();
        sse.onClose(() => abort.abort());
        const started = Date.now();
        let announced = false;
        try {
          const r = await runner.run(req, {
            signal: abort.signal,
            onStarted: ({ sessionId }) => {
              announced = true;
              send('execution.started', { sessionId });
            },
            // `delta: true`: the part's text is only what is new (clients append it).
            onPart: (part) => send('message.part.updated', { part, delta: true }),
          });
          send('result', {
            finalText: r.finalText,
            response: r.finalText,
            metadata: { sessionId: r.sessionId, traceId: r.traceId, harness: r.harness, model: r.model },
            usage: r.usage,
            timing: { totalMs: Date.now() - started },
          });
        } catch (err) {
          const e =
            err instanceof SidecarError ? err : new SidecarError('AGENT_EXECUTION_FAILED', String(err), 500);
          if (!announced) send('execution.started', { sessionId: req.sessionId ?? null });
          send('error', { code: e.code, message: e.message });
        } finally {
          sse.close();
        }
        return STREAMED;
      },
      { sse: true },
    )
    .add('POST', '/agents/run/cancel', async (ctx) => {
      const { sessionId } = parseBody(CancelBody, await ctx.body());
      const cancelled = runner.cancel(sessionId);
      ctx.log.info({ cancelled }, 'agent runs cancelled');
      return ok({ success: true, cancelled });
    });
}
