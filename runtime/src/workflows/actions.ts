// What a workflow does when it fires, from its workflow_json: `{"command": …, "cwd"?}` runs a
// command (exec), `{"prompt": …}` or `{"task": …}` starts an agent run with the API's run machinery.
// `timeout_ms` (optional) bounds the run; the operator's default applies otherwise.
import { RuntimeError } from '../errors.ts';

export type WorkflowAction =
  | { kind: 'command'; command: string; cwd?: string; timeoutMs?: number }
  | { kind: 'prompt' | 'task'; message: string; timeoutMs?: number };

const MAX_MESSAGE = 64 * 1024;

/** Parses workflow_json; throws VALIDATION saying which shapes are accepted. */
export function parseAction(workflowJson: string): WorkflowAction {
  let v: unknown;
  try {
    v = JSON.parse(workflowJson);
  } catch {
    throw new RuntimeError(
      'VALIDATION',
      'workflow_json is not valid JSON; use {"command": "…"}, {"prompt": "…"} or {"task": "…"}',
    );
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new RuntimeError(
      'VALIDATION',
      'workflow_json must be an object: {"command": …}, {"prompt": …} or {"task": …}',
    );
  }
  const o = v as Record<string, unknown>;
  const kinds = (['command', 'prompt', 'task'] as const).filter((k) => o[k] !== undefined);
  if (kinds.length !== 1) {
    throw new RuntimeError(
      'VALIDATION',
      'workflow_json needs exactly one of "command", "prompt" or "task" (a non-empty string)',
    );
  }
  const kind = kinds[0]!;
  const text = o[kind];
  if (typeof text !== 'string' || text.trim() === '' || text.length > MAX_MESSAGE) {
    throw new RuntimeError(
      'VALIDATION',
      `workflow_json "${kind}" must be a non-empty string of at most ${MAX_MESSAGE} characters`,
    );
  }
  let timeoutMs: number | undefined;
  if (o['timeout_ms'] !== undefined) {
    const t = o['timeout_ms'];
    if (typeof t !== 'number' || !Number.isInteger(t) || t <= 0) {
      throw new RuntimeError(
        'VALIDATION',
        'workflow_json "timeout_ms" must be a positive integer (milliseconds)',
      );
    }
    timeoutMs = t;
  }
  const bounded = timeoutMs === undefined ? {} : { timeoutMs };
  if (kind === 'command') {
    if (o['cwd'] !== undefined && typeof o['cwd'] !== 'string') {
      throw new RuntimeError(
        'VALIDATION',
        'workflow_json "cwd" must be a string (a directory in the sandbox)',
      );
    }
    return { kind, command: text, ...(typeof o['cwd'] === 'string' ? { cwd: o['cwd'] } : {}), ...bounded };
  }
  return { kind, message: text, ...bounded };
}
