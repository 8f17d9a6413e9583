// The two kinds of workflow action, run in a sandbox: a command through the sidecar (its output's
// tail kept), or an agent run through the API's run service, cancelled when it passes its budget.
import type { ApiSidecars, Awaitable } from '../api/deps.ts';
import { runBackend } from '../api/runs/backend.ts';
import type { RunLog } from '../api/runs/run-log.ts';
import type { RunService } from '../api/runs/run-service.ts';
import type { WorkflowAction } from './actions.ts';
import type { WorkflowRunRecord, WorkflowRunStatus } from './records.ts';

const MAX_KEEP_OUTPUT = 64 * 1024;

export async function runCommand(
  sidecars: ApiSidecars,
  sandboxId: string,
  a: Extract<WorkflowAction, { kind: 'command' }>,
  timeoutMs: number,
): Promise<Partial<WorkflowRunRecord>> {
  const client = await sidecars.client(sandboxId);
  const r = await client.exec({ command: a.command, ...(a.cwd ? { cwd: a.cwd } : {}), timeoutMs });
  // 124: the sidecar stopped the command at its timeout (as timeout(1) reports it).
  const status: WorkflowRunStatus =
    r.exitCode === 0 ? 'completed' : r.exitCode === 124 ? 'timed_out' : 'failed';
  return {
    status,
    exitCode: r.exitCode,
    stdout: r.stdout.slice(-MAX_KEEP_OUTPUT),
    stderr: r.stderr.slice(-MAX_KEEP_OUTPUT),
    error:
      status === 'completed'
        ? null
        : {
            code: status === 'timed_out' ? 'TIMEOUT' : 'EXIT_CODE',
            message: `the command exited with ${r.exitCode}`,
          },
  };
}

/**
 * An agent run through the API's run service: the same run record and events as POST …/prompt,
 * on the same backend (the harness the sandbox was created for).
 * `started` records the agent run's id on the workflow run as soon as it exists.
 */
export async function runAgent(
  o: {
    runs: Pick<RunService, 'start' | 'cancel'>;
    runLog: Pick<RunLog, 'follow' | 'get'>;
    sandboxMetadata?: ((sandboxId: string) => Awaitable<Record<string, unknown> | undefined>) | undefined;
  },
  sandboxId: string,
  a: Extract<WorkflowAction, { kind: 'prompt' | 'task' }>,
  timeoutMs: number,
  requestId: string,
  started: (agentRunId: string) => Promise<void>,
): Promise<Partial<WorkflowRunRecord>> {
  const metadata = await o.sandboxMetadata?.(sandboxId);
  const rec = await o.runs.start({
    sandboxId,
    kind: a.kind,
    request: { message: a.message, backend: runBackend(metadata) },
    timeoutMs,
    requestId,
  });
  await started(rec.run_id);
  let timer: NodeJS.Timeout | undefined;
  const abort = new AbortController();
  const ended = (async () => {
    for await (const _ of o.runLog.follow(rec.run_id, Number.MAX_SAFE_INTEGER - 1, abort.signal)) void _;
    return false;
  })();
  const expired = new Promise<boolean>((r) => {
    timer = setTimeout(() => r(true), timeoutMs);
  });
  const timedOut = await Promise.race([ended, expired]).finally(() => clearTimeout(timer));
  if (timedOut) {
    abort.abort();
    await o.runs.cancel(sandboxId, rec.run_id, requestId);
  }
  const last = await o.runLog.get(rec.run_id);
  const status: WorkflowRunStatus = timedOut
    ? 'timed_out'
    : last?.status === 'completed'
      ? 'completed'
      : last?.status === 'cancelled'
        ? 'cancelled'
        : 'failed';
  return {
    status,
    agentRunId: rec.run_id,
    finalText: last?.final_text ?? null,
    error: timedOut
      ? { code: 'TIMEOUT', message: `the run passed its ${timeoutMs} ms budget and was cancelled` }
      : (last?.error ?? null),
  };
}
