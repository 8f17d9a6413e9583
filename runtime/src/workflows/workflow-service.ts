// Workflows in the runtime (it knows no chain): stored definitions, runs bounded by a timeout with
// one active run per workflow, and the cron tick. Missed-window policy: when slots passed while the
// operator was down, the tick runs ONCE for them (missed_slots says how many were passed over) and
// never a burst. The next slot is stored before a run starts, so a restart never fires a slot twice.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ApiSidecars, ApiStore, Awaitable } from '../api/deps.ts';
import { asRuntimeError } from '../api/error-handler.ts';
import type { RunLog } from '../api/runs/run-log.ts';
import type { RunService } from '../api/runs/run-service.ts';
import { sameAddress } from '../auth/index.ts';
import { RuntimeError } from '../errors.ts';
import { parseAction, type WorkflowAction } from './actions.ts';
import type { WorkflowRecord, WorkflowRunRecord } from './records.ts';
import { runAgent, runCommand } from './run-actions.ts';
import { nextSlot, parseTrigger } from './schedule.ts';

export interface WorkflowServiceOptions {
  store: ApiStore;
  sidecars: ApiSidecars;
  runs: Pick<RunService, 'start' | 'cancel'>;
  runLog: Pick<RunLog, 'follow' | 'get'>;
  logger: Logger;
  /** The sandbox a workflow runs in; the operator resolves instance targets (runtime knows no service). */
  resolveSandbox?: (w: WorkflowRecord) => string | undefined;
  /** The sandbox's create metadata (its agent_identifier picks a prompt action's harness). */
  sandboxMetadata?: (sandboxId: string) => Awaitable<Record<string, unknown> | undefined>;
  /** Counts a run as activity for the idle timer. */
  touch?: (sandboxId: string) => unknown;
  /** Run timeout when the workflow states none, and the cap on what it states. */
  defaultTimeoutMs?: number;
  maxTimeoutMs?: number;
  /** Runs kept per workflow (oldest deleted first). */
  keepRuns?: number;
  now?: () => number;
}

export type NewWorkflow = Omit<
  WorkflowRecord,
  'active' | 'createdAt' | 'updatedAt' | 'lastTriggeredAt' | 'runs' | 'nextDueAt' | 'lastSlotAt'
>;

const key = (serviceId: string, id: string) => `${serviceId}:${id}`;
const newRunId = () => `wfr-${randomBytes(10).toString('hex')}`;

export class WorkflowService {
  readonly workflows;
  readonly runRecords;
  readonly defaultTimeoutMs: number;
  private readonly maxTimeoutMs: number;
  private readonly keepRuns: number;
  private readonly now: () => number;
  private readonly listeners: Array<() => void> = [];
  /** workflow key → its one active run. */
  private readonly active = new Map<string, Promise<WorkflowRunRecord>>();

  constructor(private readonly o: WorkflowServiceOptions) {
    this.workflows = o.store.collection<WorkflowRecord>('workflows');
    this.runRecords = o.store.collection<WorkflowRunRecord>('workflow-runs');
    this.defaultTimeoutMs = o.defaultTimeoutMs ?? 10 * 60_000;
    this.maxTimeoutMs = Math.max(o.maxTimeoutMs ?? 60 * 60_000, this.defaultTimeoutMs);
    this.keepRuns = o.keepRuns ?? 100;
    this.now = o.now ?? Date.now;
  }

  /** Checks a definition (trigger and action) without storing it; throws VALIDATION. */
  validate(w: Pick<NewWorkflow, 'workflowJson' | 'triggerType' | 'triggerConfig'>): void {
    parseAction(w.workflowJson);
    parseTrigger(w.triggerType, w.triggerConfig);
  }

  /** Stores a new workflow (idempotent: an existing one is returned unchanged). */
  async create(n: NewWorkflow): Promise<WorkflowRecord> {
    this.validate(n);
    const trigger = parseTrigger(n.triggerType, n.triggerConfig);
    const at = this.now();
    const w = await this.workflows.update(
      key(n.serviceId, n.workflowId),
      (cur) =>
        cur ?? {
          ...n,
          active: true,
          createdAt: at,
          updatedAt: at,
          lastTriggeredAt: null,
          runs: 0,
          nextDueAt: nextSlot(trigger, at),
          lastSlotAt: null,
        },
    );
    this.changed();
    return w!;
  }

  /** Called after a create or cancel (the scheduler re-arms its timer). */
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }

  get(serviceId: string, workflowId: string): Promise<WorkflowRecord | undefined> {
    return this.workflows.get(key(serviceId, workflowId));
  }

  /** The owner's workflows (another wallet's are never listed), newest first. */
  async list(owner: string): Promise<WorkflowRecord[]> {
    const all = await this.workflows.find((w) => sameAddress(w.owner, owner));
    return all.sort((a, b) => b.createdAt - a.createdAt);
  }

  /** The owner's workflow by id, or undefined (also when another wallet owns it). */
  async ownedBy(owner: string, workflowId: string): Promise<WorkflowRecord | undefined> {
    const [w] = await this.workflows.find((x) => x.workflowId === workflowId && sameAddress(x.owner, owner));
    return w;
  }

  /** A workflow's runs, newest first. */
  async runs(serviceId: string, workflowId: string, limit = this.keepRuns): Promise<WorkflowRunRecord[]> {
    const rs = await this.runRecords.find((r) => r.serviceId === serviceId && r.workflowId === workflowId);
    return rs.sort((a, b) => b.startedAt - a.startedAt).slice(0, limit);
  }

  /** Cancels a workflow: it never fires again (its schedule is cleared); a run going on finishes. */
  async cancel(serviceId: string, workflowId: string): Promise<WorkflowRecord | undefined> {
    const w = await this.workflows.update(key(serviceId, workflowId), (cur) =>
      cur ? { ...cur, active: false, nextDueAt: null, updatedAt: this.now() } : undefined,
    );
    this.changed();
    return w;
  }

  /** Job 3: runs the workflow now (or records a skipped run when one is active). */
  async trigger(serviceId: string, workflowId: string, callId: string): Promise<WorkflowRunRecord> {
    const w = await this.get(serviceId, workflowId);
    if (!w) throw new RuntimeError('NOT_FOUND', `workflow ${workflowId} is not stored on this operator`);
    if (!w.active) throw new RuntimeError('CONFLICT', `workflow ${workflowId} is canceled; create a new one`);
    const at = this.now();
    await this.workflows.update(key(serviceId, workflowId), (cur) =>
      cur ? { ...cur, lastTriggeredAt: at, updatedAt: at, runs: cur.runs + 1 } : cur,
    );
    return this.fire(w, { trigger: 'manual', callId, slotAt: null, missedSlots: 0 });
  }

  /** The earliest slot any active cron workflow is due at, or null. */
  async nextDue(): Promise<number | null> {
    const due = (await this.workflows.values())
      .filter((w) => w.active && typeof w.nextDueAt === 'number')
      .map((w) => w.nextDueAt as number);
    return due.length ? Math.min(...due) : null;
  }

  /**
   * Fires every active cron workflow whose slot has come (at `now`). The next slot is computed from
   * `now` (missed slots are passed over: one run, never a burst) and stored before the run starts.
   */
  async tick(now = this.now()): Promise<WorkflowRunRecord[]> {
    const due = await this.workflows.find(
      (w) => w.active && typeof w.nextDueAt === 'number' && w.nextDueAt <= now,
    );
    const fired: WorkflowRunRecord[] = [];
    for (const w of due) {
      let slot = 0;
      let missed = 0;
      const claimed = await this.workflows.update(key(w.serviceId, w.workflowId), (cur) => {
        if (!cur?.active || typeof cur.nextDueAt !== 'number' || cur.nextDueAt > now) return cur;
        const trigger = parseTrigger(cur.triggerType, cur.triggerConfig);
        slot = cur.nextDueAt;
        // The latest slot <= now is the one that runs; the ones before it were missed.
        for (
          let s = nextSlot(trigger, slot);
          s !== null && s <= now && missed < 100_000;
          s = nextSlot(trigger, s)
        ) {
          slot = s;
          missed++;
        }
        return {
          ...cur,
          nextDueAt: nextSlot(trigger, now),
          lastSlotAt: slot,
          lastTriggeredAt: now,
          updatedAt: now,
          runs: cur.runs + 1,
        };
      });
      if (!claimed || claimed.lastSlotAt !== slot || slot === 0) continue;
      try {
        fired.push(
          await this.fire(claimed, { trigger: 'cron', callId: null, slotAt: slot, missedSlots: missed }),
        );
      } catch (e) {
        // A stored workflow that no longer parses must not stop the others from firing.
        this.o.logger.warn(
          { workflow_id: w.workflowId, code: asRuntimeError(e).code },
          'cron run not started',
        );
      }
    }
    return fired;
  }

  /** Resolves when every run going on has ended (for shutdown and tests). */
  async idle(): Promise<void> {
    while (this.active.size > 0) await Promise.allSettled([...this.active.values()]);
  }

  /** The run of `runId` once it has ended (or as it is, when it is not going on). */
  async settled(runId: string): Promise<WorkflowRunRecord | undefined> {
    for (const p of this.active.values()) {
      const r = await p.catch(() => undefined);
      if (r?.runId === runId) return r;
    }
    const [r] = await this.runRecords.find((x) => x.runId === runId);
    return r;
  }

  /** Runs left "running" by a previous process are recorded as failed (call once at start). */
  async recover(): Promise<number> {
    const stale = await this.runRecords.find((r) => r.status === 'running');
    for (const r of stale) {
      await this.runRecords.put(this.runKey(r), {
        ...r,
        status: 'failed',
        finishedAt: this.now(),
        error: { code: 'INTERRUPTED', message: 'the operator restarted while this run was going on' },
      });
    }
    return stale.length;
  }

  private runKey(r: Pick<WorkflowRunRecord, 'serviceId' | 'workflowId' | 'runId'>): string {
    return `${r.serviceId}:${r.workflowId}:${r.runId}`;
  }

  private async fire(
    w: WorkflowRecord,
    how: Pick<WorkflowRunRecord, 'trigger' | 'callId' | 'slotAt' | 'missedSlots'>,
  ): Promise<WorkflowRunRecord> {
    const k = key(w.serviceId, w.workflowId);
    const action = parseAction(w.workflowJson);
    const base: WorkflowRunRecord = {
      runId: newRunId(),
      workflowId: w.workflowId,
      serviceId: w.serviceId,
      ...how,
      kind: action.kind,
      sandboxId: null,
      status: 'running',
      startedAt: this.now(),
      finishedAt: null,
      exitCode: null,
      stdout: '',
      stderr: '',
      agentRunId: null,
      finalText: null,
      error: null,
    };
    if (this.active.has(k)) {
      return this.endAtOnce(base, 'skipped', {
        code: 'RUN_ACTIVE',
        message: 'the previous run of this workflow was still going on',
      });
    }
    const sandboxId = (this.o.resolveSandbox ?? ((x: WorkflowRecord) => x.targetSandboxId || undefined))(w);
    const run: WorkflowRunRecord = { ...base, sandboxId: sandboxId ?? null };
    if (!sandboxId) {
      return this.endAtOnce(run, 'failed', {
        code: 'NOT_FOUND',
        message: 'the workflow target has no sandbox on this operator',
      });
    }
    await this.save(run);
    const done = this.execute(run, sandboxId, action).finally(() => this.active.delete(k));
    this.active.set(k, done);
    return run;
  }

  private async execute(
    run: WorkflowRunRecord,
    sandboxId: string,
    a: WorkflowAction,
  ): Promise<WorkflowRunRecord> {
    const timeoutMs = Math.min(a.timeoutMs ?? this.defaultTimeoutMs, this.maxTimeoutMs);
    let end: Partial<WorkflowRunRecord>;
    try {
      await this.o.touch?.(sandboxId);
      end =
        a.kind === 'command'
          ? await runCommand(this.o.sidecars, sandboxId, a, timeoutMs)
          : await runAgent(this.o, sandboxId, a, timeoutMs, `workflow-${run.runId}`, (agentRunId) =>
              this.save({ ...run, agentRunId }),
            );
    } catch (e) {
      const err = asRuntimeError(e);
      const timedOut = err.code === 'SIDECAR_TIMEOUT' || err.code === 'REQUEST_TIMEOUT';
      end = { status: timedOut ? 'timed_out' : 'failed', error: { code: err.code, message: err.message } };
      this.o.logger.warn(
        { workflow_id: run.workflowId, run_id: run.runId, code: err.code },
        'workflow run failed',
      );
    }
    const final: WorkflowRunRecord = { ...run, ...end, finishedAt: this.now() };
    await this.save(final).catch((e: unknown) =>
      this.o.logger.error(
        { run_id: run.runId, err: e instanceof Error ? e.message : String(e) },
        'could not record a workflow run',
      ),
    );
    return final;
  }

  /** A run that ends as it starts (skipped, or no sandbox to run in): recorded finished at once. */
  private async endAtOnce(
    run: WorkflowRunRecord,
    status: 'skipped' | 'failed',
    error: NonNullable<WorkflowRunRecord['error']>,
  ): Promise<WorkflowRunRecord> {
    const ended: WorkflowRunRecord = { ...run, status, finishedAt: run.startedAt, error };
    await this.save(ended);
    return ended;
  }

  private async save(r: WorkflowRunRecord): Promise<void> {
    await this.runRecords.put(this.runKey(r), r);
    if (r.status === 'running') return;
    const all = await this.runs(r.serviceId, r.workflowId, Number.MAX_SAFE_INTEGER);
    const old = all.slice(this.keepRuns).filter((x) => x.status !== 'running');
    if (old.length) await this.runRecords.delMany(old.map((x) => this.runKey(x)));
  }
}
