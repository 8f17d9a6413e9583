// Background agent runs (prompt and task): one active run per sandbox, driven through the sidecar's
// agent stream, every event stored in the RunLog (each frame within 1 MiB) so clients can follow
// or resume it. Admission returns the run id at once; an idempotency key (scoped to the sandbox
// and owner) with the same request digest returns the original run, a changed request conflicts.
// Public API for other callers (e.g. workflows): admit/start, get, cancel, activeRun.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { RuntimeError } from '../../errors.ts';
import type { AgentRunRequest } from '../../sidecar-client/index.ts';
import type { ApiSidecars } from '../deps.ts';
import { asRuntimeError, toErrorBody } from '../error-handler.ts';
import { boundFrames } from './frames.ts';
import { requestDigest } from './idempotency.ts';
import { idempotencyIndexKey, type RunKind, type RunLog, type RunRecord, type RunUsage } from './run-log.ts';
import type { RunMetrics } from './run-metrics.ts';
import { readUsage, StepUsage } from './usage.ts';

export interface StartRunInput {
  sandboxId: string;
  kind: RunKind;
  request: Omit<AgentRunRequest, 'sessionId'> & { sessionId?: string | undefined };
  timeoutMs: number;
  requestId: string;
  /** Who admits the run (an address); scopes the idempotency key. */
  owner?: string | undefined;
  /** The caller's idempotency key: the same key and request return the original run. */
  idempotencyKey?: string | undefined;
}

export interface Admission {
  run: RunRecord;
  /** True when an earlier request with the same idempotency key admitted this run. */
  replayed: boolean;
}

interface ActiveRun {
  runId: string;
  abort: AbortController;
  cancelled: boolean;
  /** The sidecar cancel in flight: the run keeps the sandbox's slot until it has been delivered. */
  cancelling?: Promise<void>;
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
  /** Admissions in progress by idempotency index key: a concurrent retry joins the first one. */
  private readonly admitting = new Map<string, Promise<Admission>>();

  constructor(
    private readonly log: RunLog,
    private readonly sidecars: ApiSidecars,
    private readonly logger: Logger,
    /** Runs and token usage per sandbox and harness, for /metrics. */
    private readonly metrics?: RunMetrics,
  ) {}

  /** Admits a run and returns it (queued) at once; see admit() for idempotent admission. */
  async start(input: StartRunInput): Promise<RunRecord> {
    return (await this.admit(input)).run;
  }

  /**
   * Admits a run: with an idempotency key, an earlier run of the same key (this sandbox, this
   * owner) is returned when its request digest matches, and IDEMPOTENCY_CONFLICT (409, naming the
   * original digest) when it does not. Without a key every call is a new run.
   */
  admit(input: StartRunInput): Promise<Admission> {
    const digest = requestDigest({
      kind: input.kind,
      message: input.request.message,
      sessionId: input.request.sessionId,
      backend: input.request.backend,
      metadata: input.request.metadata,
      timeoutMs: input.timeoutMs,
    });
    const key = input.idempotencyKey;
    if (key === undefined) return this.admitNew(input, digest);
    if (!input.owner) throw new Error('an idempotency key needs the owner it is scoped to');
    const owner = input.owner;
    const slot = idempotencyIndexKey(input.sandboxId, owner, key);
    const pending = this.admitting.get(slot);
    const attempt = (async (): Promise<Admission> => {
      // A concurrent request with this key waits for the first, then reads what it stored.
      if (pending) await pending.catch(() => undefined);
      const earlier = await this.log.byIdempotencyKey(input.sandboxId, owner, key);
      if (earlier) {
        if (earlier.request_digest !== digest) {
          throw new RuntimeError(
            'IDEMPOTENCY_CONFLICT',
            `idempotency key already used for run ${earlier.run_id} with another request ` +
              `(digest ${earlier.request_digest}); send that request again, or use a new key for a new turn`,
            { details: { run_id: earlier.run_id, request_digest: earlier.request_digest } },
          );
        }
        return { run: earlier, replayed: true };
      }
      return this.admitNew(input, digest);
    })();
    this.admitting.set(slot, attempt);
    const release = () => {
      if (this.admitting.get(slot) === attempt) this.admitting.delete(slot);
    };
    attempt.then(release, release);
    return attempt;
  }

  private async admitNew(input: StartRunInput, digest: string): Promise<Admission> {
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
        request_digest: digest,
        idempotency_key: input.idempotencyKey ?? null,
        ...(input.owner ? { owner: input.owner.toLowerCase() } : {}),
      };
      await this.log.create(record);
      await this.log.append(run.runId, 'run.queued', {
        run_id: run.runId,
        session_id: record.session_id,
        kind: input.kind,
      });
      setImmediate(() => void this.drive(run, record, input));
      return { run: record, replayed: false };
    } catch (e) {
      this.active.delete(input.sandboxId);
      throw e;
    }
  }

  get(runId: string): Promise<RunRecord | undefined> {
    return this.log.get(runId);
  }

  /**
   * Cancels exactly this run if it is going on, and answers with the run once it has ended; a
   * finished run is returned as it is. Idempotent: every cancel of a run, concurrent or later,
   * waits for the same end and returns the same record.
   */
  async cancel(sandboxId: string, runId: string, requestId: string): Promise<RunRecord | undefined> {
    const run = this.active.get(sandboxId);
    if (run && run.runId === runId) {
      if (!run.cancelled) {
        run.cancelled = true;
        // One active run per sandbox, and this one holds the slot until the sidecar has the
        // cancel (drive() waits for it): the cancel cannot reach a turn admitted after this run.
        run.cancelling = (async () => {
          try {
            await (await this.sidecars.client(sandboxId)).cancelAgent({ requestId });
          } catch (e) {
            this.logger.warn({ run_id: runId, code: asRuntimeError(e).code }, 'sidecar cancel failed');
          }
        })();
        run.abort.abort();
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
    await this.metrics?.forget(sandboxId);
    return this.log.removeSandbox(sandboxId);
  }

  /** Removes the metric series of sandboxes that are gone (the periodic sweep's share). */
  async forgetGoneMetrics(gone: (sandboxId: string) => Promise<boolean>): Promise<void> {
    if (!this.metrics) return;
    for (const id of await this.metrics.sandboxIds()) if (await gone(id)) await this.metrics.forget(id);
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
    let usage: RunUsage | null = null;
    const steps = new StepUsage();
    const idBytes = Buffer.byteLength(runId) + 12;
    const put = async (event: string, data: unknown) => {
      for (const f of boundFrames(event, data, idBytes)) await this.log.append(runId, f.event, f.data);
    };
    let harness = 'unknown';
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
        let data = parseData(ev.data);
        const d = (data ?? {}) as Record<string, unknown>;
        if (name === 'message.part.updated') {
          // A step that reports usage carries the run's running total (input counts cache, output
          // counts reasoning), like the terminal receipt.
          const total = steps.add(d.part);
          if (total) data = { ...d, usage: total, usage_mode: 'cumulative' };
        }
        await put(name, data);
        if (name === 'result') {
          const text =
            typeof d.finalText === 'string'
              ? d.finalText
              : typeof d.response === 'string'
                ? d.response
                : null;
          // Bounded like the stored events: the record and run.completed carry it again.
          finalText = text === null ? null : text.slice(0, this.log.limits.maxTextChars);
          usage = readUsage(d.usage);
          if (d.usage !== undefined && usage === null)
            log.warn('the agent reported usage that is not a valid count');
          const meta = (d.metadata ?? {}) as Record<string, unknown>;
          if (typeof meta.harness === 'string') harness = meta.harness.slice(0, 32);
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
      if (run.cancelling) await run.cancelling;
      if (run.cancelled) {
        await put('run.cancelled', { run_id: runId });
        await this.log.update(runId, { status: 'cancelled', finished_at: Date.now() });
      } else if (failure) {
        await put('run.failed', { run_id: runId, ...failure });
        await this.log.update(runId, { status: 'failed', finished_at: Date.now(), error: failure });
      } else {
        await put('run.completed', {
          run_id: runId,
          final_text: finalText,
          usage,
          ...(usage ? { usage_mode: 'cumulative' } : {}),
        });
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
      const status = run.cancelled ? 'cancelled' : failure ? 'failed' : 'completed';
      this.metrics?.record(input.sandboxId, harness, status, status === 'completed' ? usage : null);
      if (this.active.get(input.sandboxId) === run) this.active.delete(input.sandboxId);
    }
  }
}
