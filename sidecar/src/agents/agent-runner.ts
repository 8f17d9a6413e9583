// Runs one agent turn: the chosen harness (or SIDECAR_AGENT_COMMAND / the user's SANDBOX_AGENT_COMMAND) as the agent user, streaming its output.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { SidecarConfig } from '../config.ts';
import { SidecarError } from '../errors.ts';
import { childEnv } from '../exec/child-env.ts';
import { identity, runProcess } from '../exec/run-process.ts';
import { timeoutFields, timeoutMsOf } from '../http/timeout-ms.ts';
import * as z from '../schema.ts';
import { USER_AGENT_COMMAND_KEY } from '../user-env/user-env.ts';
import {
  assertCredentials,
  assertInstalled,
  chooseHarness,
  type HarnessName,
  harnessArgv,
  harnessEnv,
} from './harness.ts';
import { CUMULATIVE_USAGE, type RunUsage, usageSince } from './harness-events.ts';
import { prepareHarnessHome } from './harness-home.ts';
import { terminateTree } from './process-tree.ts';
import { StreamRedactor, secretRedactor } from './redact.ts';
import { type AgentPart, RunStream } from './run-stream.ts';
import { HARNESS_SESSION_ID, SessionStore } from './session-store.ts';

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

export type { AgentPart } from './run-stream.ts';

export interface AgentRunResult {
  finalText: string;
  traceId: string;
  sessionId: string;
  durationMs: number;
  /** The harness that ran (`custom` for SIDECAR_AGENT_COMMAND). */
  harness: string;
  /** The model the harness reported (else the one asked for, else `default`). */
  model: string;
  usage: RunUsage;
}

export interface AgentRunHooks {
  onStarted?(info: { sessionId: string; traceId: string }): void;
  onPart?(part: AgentPart): void;
  signal?: AbortSignal;
}

export class AgentRunner {
  readonly #running = new Map<string, { sessionId: string; controller: AbortController }>();
  /** Caller's session id → the harness's own conversation id, so the next turn resumes it. */
  readonly #sessions: SessionStore;
  constructor(
    private readonly config: SidecarConfig,
    private readonly log: Logger,
  ) {
    this.#sessions = new SessionStore(config, log);
  }

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

  async #invocation(req: AgentRunRequest, sessionId: string, traceId: string) {
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
      return { harness: 'custom' as const, argv: ['/bin/bash', '-lc', agentCommand], env, prior: undefined };
    }
    const base = childEnv(this.config);
    const harness = chooseHarness(req.identifier, req.backend?.type, base, this.config.defaultHarness);
    const env = { ...harnessEnv(harness, base, model), ...base };
    const meta = req.metadata ?? {};
    const systemPrompt = typeof meta['system_prompt'] === 'string' ? meta['system_prompt'] : undefined;
    const maxTurns = typeof meta['max_turns'] === 'number' ? meta['max_turns'] : undefined;
    const saved = await this.#sessions.get(sessionId);
    const prior = saved?.harness === harness ? saved : undefined;
    const argv = harnessArgv(harness, req.message, {
      model,
      env,
      systemPrompt,
      maxTurns,
      ...(prior ? { resumeId: prior.id } : {}),
    });
    assertInstalled(harness, argv[0]!, env['PATH']);
    assertCredentials(harness, env);
    await prepareHarnessHome(harness, env, this.config);
    return { harness, argv, env, prior };
  }

  async run(req: AgentRunRequest, hooks: AgentRunHooks = {}): Promise<AgentRunResult> {
    const sessionId = req.sessionId ?? randomUUID();
    const traceId = randomUUID();
    const inv = await this.#invocation(req, sessionId, traceId);
    const log = this.log.child({ traceId, sessionId, harness: inv.harness });
    const controller = new AbortController();
    const onOuterAbort = () => controller.abort();
    hooks.signal?.addEventListener('abort', onOuterAbort, { once: true });
    this.#running.set(traceId, { sessionId, controller });
    hooks.onStarted?.({ sessionId, traceId });
    log.info('agent run started');
    // Credentials never leave in an event, even when the agent prints them.
    const redact = secretRedactor(inv.env);
    const redactor = new StreamRedactor(inv.env, (p) => hooks.onPart?.(p));
    const stream = new RunStream(
      inv.harness,
      `part_${traceId}`,
      this.config.outputLimitBytes,
      (p: AgentPart) => redactor.part(p),
    );
    const timeoutMs = timeoutMsOf(req) ?? this.config.agentTimeoutMs;
    // Cancel and timeout reach the tools a harness started in sessions of their own: the whole
    // tree is signalled (this listener runs before runProcess's, which signals the group).
    let pid: number | undefined;
    let timedOut = false;
    const onAbort = () => {
      if (pid) terminateTree(pid);
    };
    controller.signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    try {
      const r = await runProcess({
        argv: inv.argv,
        cwd: this.config.workspaceRoot,
        env: inv.env,
        ...identity(this.config.uid, this.config.gid),
        timeoutMs: timeoutMs + 60_000,
        outputLimitBytes: this.config.outputLimitBytes,
        signal: controller.signal,
        onSpawn: (p) => {
          pid = p;
        },
        onStdout: (chunk) => stream.write(chunk),
      });
      if (timedOut) Object.assign(r, { timedOut: true, cancelled: false });
      const ok = !r.cancelled && !r.timedOut && r.exitCode === 0;
      const out = stream.end(ok);
      redactor.flush();
      // The harness's conversation continues with the next turn of this session, even after a failure.
      // Only a plain id goes back into an argv (never one that could read as a flag).
      const resumable = out.harnessSessionId && HARNESS_SESSION_ID.test(out.harnessSessionId);
      // A harness that reports the conversation's running total: this run cost the difference.
      const cumulative = inv.harness !== 'custom' && CUMULATIVE_USAGE.has(inv.harness);
      const reported = out.usage;
      if (cumulative && inv.prior?.total && inv.prior.id === out.harnessSessionId) {
        out.usage = usageSince(reported, inv.prior.total);
      }
      if (resumable && out.harnessSessionId && inv.harness !== 'custom') {
        await this.#sessions.set(sessionId, {
          harness: inv.harness,
          id: out.harnessSessionId,
          ...(cumulative ? { total: reported } : {}),
        });
      }
      if (r.cancelled) throw new SidecarError('AGENT_EXECUTION_FAILED', 'agent run cancelled', 500);
      if (r.timedOut) {
        throw new SidecarError('AGENT_EXECUTION_FAILED', `agent run timed out after ${timeoutMs} ms`, 500);
      }
      if (r.exitCode !== 0 || out.error) {
        const tail = redact((out.error ?? r.stderr.trim()).slice(-2000));
        throw new SidecarError(
          'AGENT_EXECUTION_FAILED',
          `agent '${inv.harness}' ${r.exitCode !== 0 ? `exited with code ${r.exitCode}` : 'failed'}${tail ? `: ${tail}` : ''}`,
          500,
        );
      }
      log.info({ ms: r.durationMs, usage: out.usage }, 'agent run finished');
      return {
        finalText: redact(out.finalText).slice(0, this.config.outputLimitBytes),
        traceId,
        sessionId,
        durationMs: r.durationMs,
        harness: inv.harness,
        model: out.model ?? req.backend?.model ?? 'default',
        usage: out.usage,
      };
    } catch (err) {
      log.warn({ code: (err as SidecarError).code }, 'agent run failed');
      if (err instanceof SidecarError && err.code !== 'SPAWN_FAILED') throw err;
      throw new SidecarError('AGENT_EXECUTION_FAILED', `agent run failed: ${(err as Error).message}`, 500);
    } finally {
      clearTimeout(timer);
      controller.signal.removeEventListener('abort', onAbort);
      stream.cancel();
      this.#running.delete(traceId);
      hooks.signal?.removeEventListener('abort', onOuterAbort);
    }
  }
}
