// The backend of an agent run, shared by POST …/prompt|task and workflow prompt/task actions: the
// request's, else the harness the sandbox was created for (its `agent_identifier`, e.g. `create
// --agent claude`), so its runs need no backend of their own; else the sidecar chooses.
import { HARNESSES } from '@agent-sandbox/platform-names';

export interface RunBackend {
  type: string | undefined;
  model: string | undefined;
}

export function runBackend(
  metadata: Record<string, unknown> | undefined,
  type?: string,
  model?: string,
): RunBackend | undefined {
  const agent = metadata?.['agent_identifier'];
  const t = type || (HARNESSES.find((h) => h === agent) ?? undefined);
  return t || model ? { type: t, model } : undefined;
}
