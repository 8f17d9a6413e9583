// Runs one agent turn: the chosen harness (or SIDECAR_AGENT_COMMAND / the user's SANDBOX_AGENT_COMMAND) as the agent user, streaming its output.
import { randomUUID } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import type { Logger } from 'pino';
import type { SidecarConfig } from '../config.ts';
import { SidecarError } from '../errors.ts';
import { childEnv } from '../exec/child-env.ts';
import { identity, runProcess } from '../exec/run-process.ts';
import { timeoutFields, timeoutMsOf } from '../http/timeout-ms.ts';
import * as z from '../schema.ts';
import { USER_AGENT_COMMAND_KEY } from '../user-env/user-env.ts';
import { assertInstalled, chooseHarness, harnessArgv } from './harness.ts';

const PART_INTERVAL_MS = 50;
const MAX_PENDING_LINE = 64 * 1024;

export const AgentRunBody = z.object({
  identifier: z._default(z.string().check(z.minLength(1)), 'default'),
  message: z.string({ error: 'message is required' }).check(z.minLength(1, 'message is required')),
  sessionId: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  backend: z.optional(
    z.object({
      type: z.optional(z.string()),
      model: z.optional(z.string()),
      profile: z.optional(z.string()),
    }),
  ),
  metadata: z.optional(z.record(z.string(), z.unknown())),
  ...timeoutFields,
});
export type AgentRunRequest = z.infer<typeof AgentRunBody>;

/**
 * One streamed piece of a part: `text` (and `content`, the same) hold only what is new since the
 * part's previous event, so a flood of output costs its own size on the stream, not its square.
 */
export interface AgentPart {
  id: string;
  type: 'text' | 'reasoning' | 'tool';
  text: string;
  content: string;
  state?: 'running' | 'completed';
}

export interface AgentRunResult {
  finalText: string;
  traceId: string;
  sessionId: string;
  durationMs: number;
  usage: { inputTokens: number; outputTokens: number };
}

export interface AgentRunHooks {
  onStarted?(info: { sessionId: string; traceId: string }): void;
  onPart?(part: AgentPart): void;
  signal?: AbortSignal;
}

export class AgentRunner {
  readonly #running = new Map<string, { sessionId: string; controller: AbortController }>();
  /** Sessions a harness has seen, so the next turn resumes instead of starting over. */
  readonly #sessions = new Set<string>();
  constructor(
    private readonly config: SidecarConfig,
    private readonly log: Logger,
  ) {}

  get runningCount(): number {
    return this.#running.size;
  }

  /** Cancels every running turn (or those of one session): TERM to the whole process group, KILL after 2 s. */
  cancel(sessionId?: string): number {
    let n = 0;
    for (const run of this.#running.values()) {
      if (sessionId && run.sessionId !== sessionId) continue;
      run.controller.abort();
      n++;
    }
    return n;
  }

  #invocation(req: AgentRunRequest, sessionId: string, traceId: string) {
    const model = req.backend?.model;
    // The operator's own setting first; else the agent program the user named in their env.
    const agentCommand = this.config.agentCommand ?? this.config.userEnv.current[USER_AGENT_COMMAND_KEY];
    if (agentCommand) {
      const env = childEnv(this.config, {
        SIDECAR_AGENT_MESSAGE: req.message,
        SIDECAR_AGENT_MODEL: model ?? '',
        SIDECAR_AGENT_SESSION_ID: sessionId,
        SIDECAR_AGENT_TRACE_ID: traceId,
      });
      return { harness: 'custom', argv: ['/bin/bash', '-lc', agentCommand], env };
    }
    const env = childEnv(this.config);
    const harness = chooseHarness(req.identifier, req.backend?.type, env, this.config.defaultHarness);
    const argv = harnessArgv(harness, req.message, {
      model,
      sessionId,
      resume: this.#sessions.has(sessionId),
    });
    assertInstalled(harness, argv[0]!, env['PATH']);
    return { harness, argv, env };
  }

  async run(req: AgentRunRequest, hooks: AgentRunHooks = {}): Promise<AgentRunResult> {
    const sessionId = req.sessionId ?? randomUUID();
    const traceId = randomUUID();
    const inv = this.#invocation(req, sessionId, traceId);
    const log = this.log.child({ traceId, sessionId, harness: inv.harness });
    const controller = new AbortController();
    const onOuterAbort = () => controller.abort();
    hooks.signal?.addEventListener('abort', onOuterAbort, { once: true });
    this.#running.set(traceId, { sessionId, controller });
    hooks.onStarted?.({ sessionId, traceId });
    log.info('agent run started');

    const partId = `part_${traceId}`;
    const decoder = new StringDecoder('utf8');
    let text = '';
    let pending = '';
    const limit = this.config.outputLimitBytes;
    // Deltas, coalesced: at most one event per PART_INTERVAL_MS carrying the text appended since
    // the last one (the whole text is only in the result).
    let emitted = 0;
    let lastEmit = 0;
    let partTimer: NodeJS.Timeout | undefined;
    const emit = (state: AgentPart['state']) => {
      const delta = text.slice(emitted);
      emitted = text.length;
      lastEmit = Date.now();
      hooks.onPart?.({ id: partId, type: 'text', text: delta, content: delta, state });
    };
    const flushPart = () => {
      partTimer = undefined;
      if (text.length > emitted) emit('running');
    };
    const schedulePart = () => {
      if (partTimer) return;
      const wait = PART_INTERVAL_MS - (Date.now() - lastEmit);
      if (wait <= 0) flushPart();
      else partTimer = setTimeout(flushPart, wait);
    };
    try {
      const r = await runProcess({
        argv: inv.argv,
        cwd: this.config.workspaceRoot,
        env: inv.env,
        ...identity(this.config.uid, this.config.gid),
        timeoutMs: timeoutMsOf(req) ?? this.config.agentTimeoutMs,
        outputLimitBytes: limit,
        signal: controller.signal,
        onStdout: (chunk) => {
          pending += decoder.write(chunk);
          let nl = pending.lastIndexOf('\n');
          // A very long line without a newline is passed on anyway rather than held without bound.
          if (nl < 0 && pending.length >= MAX_PENDING_LINE) nl = pending.length - 1;
          if (nl < 0) return;
          // Whole lines only, so a client never renders half a line; accumulated text is capped like exec output.
          if (text.length < limit) text = (text + pending.slice(0, nl + 1)).slice(0, limit);
          pending = pending.slice(nl + 1);
          schedulePart();
        },
      });
      clearTimeout(partTimer);
      pending += decoder.end();
      if (pending && text.length < limit) text = (text + pending).slice(0, limit);
      if (r.cancelled) throw new SidecarError('AGENT_EXECUTION_FAILED', 'agent run cancelled', 500);
      if (r.timedOut) {
        throw new SidecarError(
          'AGENT_EXECUTION_FAILED',
          `agent run timed out after ${timeoutMsOf(req) ?? this.config.agentTimeoutMs} ms`,
          500,
        );
      }
      if (r.exitCode !== 0) {
        const tail = r.stderr.trim().slice(-2000);
        throw new SidecarError(
          'AGENT_EXECUTION_FAILED',
          `agent '${inv.harness}' exited with code ${r.exitCode}${tail ? `: ${tail}` : ''}`,
          500,
        );
      }
      const finalText = text.trim();
      emit('completed');
      this.#sessions.add(sessionId);
      log.info({ ms: r.durationMs }, 'agent run finished');
      return {
        finalText,
        traceId,
        sessionId,
        durationMs: r.durationMs,
        usage: { inputTokens: 0, outputTokens: 0 },
      };
    } catch (err) {
      log.warn({ code: (err as SidecarError).code }, 'agent run failed');
      if (err instanceof SidecarError && err.code !== 'SPAWN_FAILED') throw err;
      throw new SidecarError('AGENT_EXECUTION_FAILED', `agent run failed: ${(err as Error).message}`, 500);
    } finally {
      clearTimeout(partTimer);
      this.#running.delete(traceId);
      hooks.signal?.removeEventListener('abort', onOuterAbort);
    }
  }
}
