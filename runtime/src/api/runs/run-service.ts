// Background agent runs (prompt and task): one active run per sandbox, driven through the sidecar's
// agent stream, every event stored in the RunLog so clients can follow or resume it.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { RuntimeError } from '../../errors.ts';
import type { AgentRunRequest } from '../../sidecar-client/index.ts';
import type { ApiSidecars } from '../deps.ts';
import { asRuntimeError, toErrorBody } from '../error-handler.ts';
import type { RunKind, RunLog, RunRecord } from './run-log.ts';

export interface StartRunInput {
  sandboxId: string;
  kind: RunKind;
  request: Omit<AgentRunRequest, 'sessionId'> & { sessionId?: string | undefined };
  timeoutMs: number;
  requestId: string;
}

interface ActiveRun {
  runId: string;
  abort: AbortController;
  cancelled: boolean;
}

// Sidecar events carry one-line JSON; anything else is kept as text rather than dropped.
function parseData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return { text: data };
  }
}

const newId = (prefix: string) => `${prefix}-${randomBytes(12).toString('hex')}`;

export class RunService {
  /** sandbox id → its one active run. */
  private readonly active = new Map<string, ActiveRun>();

  constructor(
    private readonly log: RunLog,
    private readonly sidecars: ApiSidecars,
    private readonly logger: Logger,
  ) {}

  async start(input: StartRunInput): Promise<RunRecord> {
    const busy = this.active.get(input.sandboxId);
    if (busy) {
      throw new RuntimeError(
        'CHAT_RUN_ACTIVE',
        'this sandbox already has an active run; wait for it or cancel it',
        {
          details: { run_id: busy.runId },
        },
      );
    }
    const run: ActiveRun = { runId: newId('run'), abort: new AbortController(), cancelled: false };
    // Claimed before the first await so two concurrent starts cannot both pass the check.
    this.active.set(input.sandboxId, run);
    try {
      const record: RunRecord = {
        run_id: run.runId,
        sandbox_id: input.sandboxId,
        kind: input.kind,
        session_id: input.request.sessionId ?? newId('ses'),
        status: 'queued',
        created_at: Date.now(),
        started_at: null,
        finished_at: null,
        last_event_id: 0,
        final_text: null,
        usage: null,
        error: null,
      };
      await this.log.create(record);
      await this.log.append(run.runId, 'run.queued', {
        run_id: run.runId,
        session_id: record.session_id,
        kind: input.kind,
      });
      setImmediate(() => void this.drive(run, record, input));
      return record;
    } catch (e) {
      this.active.delete(input.sandboxId);
      throw e;
    }
  }

  get(runId: string): Promise<RunRecord | undefined> {
    return this.log.get(runId);
  }

  /** Cancels an active run; a finished run is returned as it is (idempotent). */
  async cancel(sandboxId: string, runId: string, requestId: string): Promise<RunRecord | undefined> {
    const run = this.active.get(sandboxId);
    if (run && run.runId === runId && !run.cancelled) {
      run.cancelled = true;
      run.abort.abort();
      try {
        await (await this.sidecars.client(sandboxId)).cancelAgent({ requestId });
      } catch (e) {
        this.logger.warn({ run_id: runId, code: asRuntimeError(e).code }, 'sidecar cancel failed');
      }
      // Bounded: a sidecar that ignores the abort must not hold the cancel request forever.
      await Promise.race([this.settled(runId), new Promise((r) => setTimeout(r, 10_000).unref())]);
    }
    return this.log.get(runId);
  }

  /**
   * A deleted sandbox's runs go with it: its active run is cancelled (bounded wait), then every
   * run and event of it is deleted. Returns how many runs were deleted.
   */
  async forgetSandbox(sandboxId: string, requestId = 'sandbox-deleted'): Promise<number> {
    const active = this.active.get(sandboxId);
    if (active) await this.cancel(sandboxId, active.runId, requestId);
    return this.log.removeSandbox(sandboxId);
  }

  activeRun(sandboxId: string): string | undefined {
    return this.active.get(sandboxId)?.runId;
  }

  private async settled(runId: string): Promise<void> {
    // follow() from past the end yields nothing and returns once the run is terminal.
    const it = this.log.follow(runId, Number.MAX_SAFE_INTEGER - 1);
    for await (const _ of it) void _;
  }

  private async drive(run: ActiveRun, record: RunRecord, input: StartRunInput): Promise<void> {
    const { runId } = run;
    const log = this.logger.child({
      run_id: runId,
      sandbox_id: input.sandboxId,
      request_id: input.requestId,
    });
    let finalText: string | null = null;
    let usage: RunRecord['usage'] = null;
    let failure: { code: string; message: string } | null = null;
    try {
      await this.log.update(runId, { status: 'running', started_at: Date.now() });
      const client = await this.sidecars.client(input.sandboxId);
      const stream = client.streamAgent(
        { ...input.request, sessionId: record.session_id, timeoutMs: input.timeoutMs },
        {
          requestId: input.requestId,
          signal: run.abort.signal,
          timeoutMs: input.timeoutMs,
          kind: input.kind === 'task' ? 'task' : 'agent',
        },
      );
      for await (const ev of stream) {
        if (run.cancelled) break;
        const name = ev.event ?? 'message';
        const data = parseData(ev.data);
        await this.log.append(runId, name, data);
        const d = (data ?? {}) as Record<string, unknown>;
        if (name === 'result') {
          const text =
            typeof d.finalText === 'string'
              ? d.finalText
              : typeof d.response === 'string'
                ? d.response
                : null;
          // Bounded like the stored events: the record and run.completed carry it again.
          finalText = text === null ? null : text.slice(0, this.log.limits.maxTextChars);
          usage = (d.usage as RunRecord['usage']) ?? null;
        } else if (name === 'error') {
          failure = {
            code: typeof d.code === 'string' ? d.code : 'AGENT_EXECUTION_FAILED',
            message: typeof d.message === 'string' ? d.message : 'the agent failed',
          };
        }
      }
      if (!run.cancelled && !failure && finalText === null) {
        failure = { code: 'AGENT_EXECUTION_FAILED', message: 'the agent stream ended without a result' };
      }
    } catch (e) {
      if (!run.cancelled) {
        const body = toErrorBody(asRuntimeError(e), input.requestId).error;
        failure = { code: body.code, message: body.message };
        log.warn({ code: body.code, err: e instanceof Error ? e.message : String(e) }, 'run failed');
      }
    }
    try {
      if (run.cancelled) {
        await this.log.append(runId, 'run.cancelled', { run_id: runId });
        await this.log.update(runId, { status: 'cancelled', finished_at: Date.now() });
      } else if (failure) {
        await this.log.append(runId, 'run.failed', { run_id: runId, ...failure });
        await this.log.update(runId, { status: 'failed', finished_at: Date.now(), error: failure });
      } else {
        await this.log.append(runId, 'run.completed', { run_id: runId, final_text: finalText, usage });
        await this.log.update(runId, {
          status: 'completed',
          finished_at: Date.now(),
          final_text: finalText,
          usage,
        });
      }
    } catch (e) {
      log.error({ err: e instanceof Error ? e.message : String(e) }, 'could not record the end of a run');
    } finally {
      if (this.active.get(input.sandboxId) === run) this.active.delete(input.sandboxId);
    }
  }
}
