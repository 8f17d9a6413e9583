// The request and result bodies of the sidecar's routes as the runtime sees them (camelCase;
// client.ts maps `timeoutMs` to the wire's `timeout_ms`).

export interface ExecRequest {
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  /** Command time limit inside the sandbox (`timeout_ms` on the wire). */
  timeoutMs?: number;
}
export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  duration?: number;
}
export interface AgentRunRequest {
  identifier?: string;
  message: string;
  sessionId?: string;
  backend?: { type?: string; model?: string; profile?: string };
  metadata?: Record<string, unknown>;
  /** Run time limit inside the sandbox (`timeout_ms` on the wire). */
  timeoutMs?: number;
}
export interface AgentRunResult {
  success: boolean;
  response?: string;
  data?: { finalText?: string };
  traceId?: string;
  durationMs?: number;
  sessionId?: string;
  usage?: {
    inputTokens?: number;
    outputTokens?: number;
    cachedInputTokens?: number;
    reasoningTokens?: number;
  };
}
export interface TerminalCreateRequest {
  cwd?: string;
  cols?: number;
  rows?: number;
  env?: Record<string, string>;
  title?: string;
}
export type Json = Record<string, unknown>;
