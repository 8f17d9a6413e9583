// Reads each harness's machine-readable output (one JSON object a line: codex `exec --json`, claude
// `stream-json`, opencode `--format json`, gemini `stream-json`) into one shape of run events.
import type { HarnessName } from './harness.ts';

export interface RunUsage {
  /** Every input token, cache reads and writes included. */
  inputTokens: number;
  /** Every output token, reasoning included. */
  outputTokens: number;
  cachedInputTokens?: number;
  reasoningTokens?: number;
}

export interface ToolCall {
  name: string;
  callId: string;
  input: unknown;
  output?: string;
  status: 'running' | 'completed' | 'error';
}

export type HarnessEvent =
  | { kind: 'text' | 'reasoning'; id: string; delta: string }
  | { kind: 'tool'; id: string; tool: ToolCall }
  /** The harness's own conversation id (what a follow-up turn resumes). */
  | { kind: 'session'; id: string }
  | { kind: 'model'; model: string }
  | { kind: 'usage'; usage: RunUsage }
  /** The harness's own final answer, when it states one (else the last text segment is final). */
  | { kind: 'final'; text: string }
  | { kind: 'error'; message: string };

// biome-ignore lint/suspicious/noExplicitAny: each harness's JSON events, read defensively
type J = any;

const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

function usage(input: number, output: number, cached: number, reasoning: number): RunUsage {
  return {
    inputTokens: input,
    outputTokens: output,
    ...(cached ? { cachedInputTokens: cached } : {}),
    ...(reasoning ? { reasoningTokens: reasoning } : {}),
  };
}

// ---- codex exec --json ----
function codex(e: J): HarnessEvent[] {
  switch (e.type) {
    case 'thread.started':
      return e.thread_id ? [{ kind: 'session', id: str(e.thread_id) }] : [];
    case 'turn.completed': {
      const u = e.usage ?? {};
      // codex counts cached input inside input_tokens and reasoning inside output_tokens.
      return [
        {
          kind: 'usage',
          usage: usage(
            num(u.input_tokens),
            num(u.output_tokens),
            num(u.cached_input_tokens),
            num(u.reasoning_output_tokens),
          ),
        },
      ];
    }
    case 'turn.failed':
      return [{ kind: 'error', message: str(e.error?.message ?? e.error) }];
    case 'item.started':
    case 'item.updated':
    case 'item.completed':
      return codexItem(e.item ?? {}, e.type === 'item.completed');
    default:
      return [];
  }
}

function codexItem(item: J, done: boolean): HarnessEvent[] {
  const id = `part_${str(item.id)}`;
  switch (item.type) {
    case 'agent_message':
      return done ? [{ kind: 'text', id, delta: str(item.text) }] : [];
    case 'reasoning':
      return done ? [{ kind: 'reasoning', id, delta: str(item.text) }] : [];
    case 'error':
      // codex reports warnings (e.g. unknown model metadata) as error items; the run goes on.
      return [];
    case 'command_execution': {
      const status = !done ? 'running' : item.exit_code === 0 ? 'completed' : 'error';
      const tool: ToolCall = {
        name: 'shell',
        callId: str(item.id),
        input: { command: item.command },
        status,
      };
      if (done) tool.output = str(item.aggregated_output);
      return [{ kind: 'tool', id, tool }];
    }
    default: {
      // file_change, mcp_tool_call, web_search, todo_list: tools under their item type.
      const { id: _id, type, status: s, result, error, ...input } = item;
      const status = !done ? 'running' : s === 'failed' || error ? 'error' : 'completed';
      const tool: ToolCall = { name: str(type), callId: str(item.id), input, status };
      if (done) tool.output = str(result ?? error?.message ?? s ?? '');
      return [{ kind: 'tool', id, tool }];
    }
  }
}

// ---- claude -p --output-format stream-json --verbose ----
function toolResultText(c: J): string {
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((b) => (b?.type === 'text' ? str(b.text) : '')).join('');
  return str(c);
}

function claude(e: J): HarnessEvent[] {
  const out: HarnessEvent[] = [];
  if (e.type === 'system' && e.subtype === 'init') {
    if (e.session_id) out.push({ kind: 'session', id: str(e.session_id) });
    if (e.model) out.push({ kind: 'model', model: str(e.model) });
  } else if (e.type === 'assistant' && e.parent_tool_use_id == null) {
    const content: J[] = Array.isArray(e.message?.content) ? e.message.content : [];
    content.forEach((b, i) => {
      const id = `part_${str(e.message?.id)}_${i}`;
      if (b?.type === 'text') out.push({ kind: 'text', id, delta: str(b.text) });
      else if (b?.type === 'thinking') out.push({ kind: 'reasoning', id, delta: str(b.thinking) });
      else if (b?.type === 'tool_use') {
        const tool: ToolCall = { name: str(b.name), callId: str(b.id), input: b.input, status: 'running' };
        out.push({ kind: 'tool', id: `tool_${str(b.id)}`, tool });
      }
    });
  } else if (e.type === 'user' && e.parent_tool_use_id == null) {
    const content: J[] = Array.isArray(e.message?.content) ? e.message.content : [];
    for (const b of content) {
      if (b?.type !== 'tool_result') continue;
      out.push({
        kind: 'tool',
        id: `tool_${str(b.tool_use_id)}`,
        // name and input come from the running event of the same part id (the runner merges them).
        tool: {
          name: '',
          callId: str(b.tool_use_id),
          input: undefined,
          output: toolResultText(b.content),
          status: b.is_error ? 'error' : 'completed',
        },
      });
    }
  } else if (e.type === 'result') {
    const u = e.usage ?? {};
    const read = num(u.cache_read_input_tokens);
    // Anthropic's input_tokens excludes cache reads and writes; ours includes them.
    const input = num(u.input_tokens) + read + num(u.cache_creation_input_tokens);
    out.push({ kind: 'usage', usage: usage(input, num(u.output_tokens), read, 0) });
    if (e.is_error || (e.subtype && e.subtype !== 'success')) {
      out.push({ kind: 'error', message: str(e.result || e.subtype || 'claude reported an error') });
    } else out.push({ kind: 'final', text: str(e.result) });
  }
  return out;
}

// ---- opencode run --format json ----
function opencode(e: J): HarnessEvent[] {
  const p = e.part ?? {};
  const out: HarnessEvent[] = [];
  if (e.sessionID) out.push({ kind: 'session', id: str(e.sessionID) });
  switch (e.type) {
    case 'text':
      out.push({ kind: 'text', id: `part_${str(p.id)}`, delta: str(p.text) });
      break;
    case 'reasoning':
      out.push({ kind: 'reasoning', id: `part_${str(p.id)}`, delta: str(p.text) });
      break;
    case 'tool_use': {
      const st = p.state ?? {};
      const id = `part_${str(p.id)}`;
      const base = { name: str(p.tool), callId: str(p.callID), input: st.input };
      // opencode reports a tool once it has finished: the start is announced with it.
      out.push({ kind: 'tool', id, tool: { ...base, status: 'running' } });
      if (st.status === 'completed' || st.status === 'error') {
        const output = st.status === 'error' ? str(st.error) : str(st.output);
        out.push({ kind: 'tool', id, tool: { ...base, output, status: st.status } });
      }
      break;
    }
    case 'step_finish': {
      const t = p.tokens ?? {};
      const read = num(t.cache?.read);
      // opencode's input excludes cache reads and writes; its output excludes reasoning.
      const input = num(t.input) + read + num(t.cache?.write);
      const reasoning = num(t.reasoning);
      out.push({ kind: 'usage', usage: usage(input, num(t.output) + reasoning, read, reasoning) });
      break;
    }
    case 'error':
      out.push({ kind: 'error', message: str(e.error?.data?.message ?? e.error?.message ?? e.error) });
      break;
  }
  return out;
}

// ---- gemini --output-format stream-json ----
function gemini(e: J): HarnessEvent[] {
  switch (e.type) {
    case 'init':
      return [
        ...(e.session_id ? [{ kind: 'session' as const, id: str(e.session_id) }] : []),
        ...(e.model ? [{ kind: 'model' as const, model: str(e.model) }] : []),
      ];
    case 'message':
      return e.role === 'assistant' ? [{ kind: 'text', id: '', delta: str(e.content) }] : [];
    case 'tool_use':
      return [
        {
          kind: 'tool',
          id: `tool_${str(e.tool_id)}`,
          tool: { name: str(e.tool_name), callId: str(e.tool_id), input: e.parameters, status: 'running' },
        },
      ];
    case 'tool_result':
      return [
        {
          kind: 'tool',
          id: `tool_${str(e.tool_id)}`,
          tool: {
            name: '',
            callId: str(e.tool_id),
            input: undefined,
            output: e.status === 'success' ? str(e.output) : str(e.error?.message ?? e.output ?? e.error),
            status: e.status === 'success' ? 'completed' : 'error',
          },
        },
      ];
    case 'result': {
      const s = e.stats ?? {};
      const out: HarnessEvent[] = [
        { kind: 'usage', usage: usage(num(s.input_tokens), num(s.output_tokens), num(s.cached), 0) },
      ];
      if (e.status && e.status !== 'success') {
        out.push({ kind: 'error', message: str(e.error?.message ?? e.error ?? e.status) });
      }
      return out;
    }
    case 'error':
      return e.severity === 'warning' ? [] : [{ kind: 'error', message: str(e.message) }];
    default:
      return [];
  }
}

const PARSERS: Record<HarnessName, (e: J) => HarnessEvent[]> = { codex, claude, opencode, gemini };

/** The events in one line of a harness's output; a line that is not a JSON object yields none. */
export function parseHarnessLine(harness: HarnessName, line: string): HarnessEvent[] {
  const t = line.trim();
  if (!t.startsWith('{')) return [];
  let e: J;
  try {
    e = JSON.parse(t);
  } catch {
    return [];
  }
  return e && typeof e === 'object' ? PARSERS[harness](e) : [];
}

/** Sums usage across a run's turns or steps. */
export function addUsage(a: RunUsage, b: RunUsage): RunUsage {
  const cached = (a.cachedInputTokens ?? 0) + (b.cachedInputTokens ?? 0);
  const reasoning = (a.reasoningTokens ?? 0) + (b.reasoningTokens ?? 0);
  return usage(a.inputTokens + b.inputTokens, a.outputTokens + b.outputTokens, cached, reasoning);
}

/**
 * Harnesses whose usage on a resumed conversation is the conversation's running total, not the
 * run's: codex `exec … resume` reports the thread's total in `turn.completed` (claude, opencode and
 * gemini report what the run itself cost; test/harnesses checks all four over two follow-ups).
 */
export const CUMULATIVE_USAGE: ReadonlySet<HarnessName> = new Set(['codex']);

/** What a run cost, from the total after it and the total before it (never below zero). */
export function usageSince(total: RunUsage, before: RunUsage): RunUsage {
  const d = (a: number | undefined, b: number | undefined) => Math.max(0, (a ?? 0) - (b ?? 0));
  return usage(
    d(total.inputTokens, before.inputTokens),
    d(total.outputTokens, before.outputTokens),
    d(total.cachedInputTokens, before.cachedInputTokens),
    d(total.reasoningTokens, before.reasoningTokens),
  );
}
