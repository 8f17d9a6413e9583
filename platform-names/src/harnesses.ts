// The coding-agent harnesses a sandbox can run, by the name requests use (agent_identifier,
// backend type): the sidecar runs them, the operator picks one for a sandbox's runs.
export const HARNESSES = ['codex', 'claude', 'opencode', 'gemini'] as const;
export type HarnessName = (typeof HARNESSES)[number];
