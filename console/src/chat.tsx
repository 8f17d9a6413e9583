// Agent chat: prompt → a run whose events stream over fetch (Authorization header); text deltas,
// tool calls and results as separate blocks, final answer, token usage, cancel. The blocks and the
// last event id are kept in sessionStorage, so a reload resumes with Last-Event-ID: no gap, no repeat.
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError, type SseEvent } from './api.ts';
import { api } from './main.tsx';
import { Err } from './ui.tsx';

interface Block {
  id: string;
  kind: 'text' | 'reasoning' | 'tool' | 'error';
  text: string;
  tool?: { name?: string; input?: unknown; output?: unknown; status?: string };
}
export interface ChatState {
  runId?: string;
  lastEventId?: string;
  prompt?: string;
  blocks: Block[];
  finalText?: string;
  usage?: Record<string, number>;
  status?: string;
}

const key = (sandbox: string) => `console.chat.${sandbox}`;
const load = (sandbox: string): ChatState =>
  JSON.parse(sessionStorage.getItem(key(sandbox)) ?? '{"blocks":[]}');
const seq = (id: string | undefined) => Number(id?.slice(id.lastIndexOf(':') + 1) ?? 0);

interface Part {
  id: string;
  type?: string;
  text?: string;
  content?: string;
  tool?: Block['tool'];
}
interface EventData extends Partial<Part> {
  part?: Part;
  finalText?: string;
  final_text?: string;
  response?: string;
  usage?: Record<string, number>;
  message?: string;
  code?: string;
}

/** Applies one run event to the state (pure); events at or before lastEventId are ignored. */
export function applyEvent(s: ChatState, ev: SseEvent): ChatState {
  if (ev.id && s.lastEventId && seq(ev.id) <= seq(s.lastEventId)) return s;
  const next: ChatState = { ...s, blocks: [...s.blocks], lastEventId: ev.id ?? s.lastEventId };
  let d: EventData = {};
  try {
    d = JSON.parse(ev.data);
  } catch {
    // not JSON: keep the id, ignore the body
  }
  if (ev.event === 'message.part.updated') {
    const part = (d.part ?? d) as Part;
    const i = next.blocks.findIndex((b) => b.id === part.id);
    if (part.type === 'tool') {
      const t = part.tool ?? {};
      const b: Block = {
        id: part.id,
        kind: 'tool',
        text: '',
        tool: { ...(i >= 0 ? next.blocks[i]!.tool : {}), ...t },
      };
      if (i >= 0) next.blocks[i] = b;
      else next.blocks.push(b);
    } else {
      const delta = String(part.text ?? part.content ?? '');
      if (i >= 0) next.blocks[i] = { ...next.blocks[i]!, text: next.blocks[i]!.text + delta };
      else
        next.blocks.push({
          id: part.id,
          kind: part.type === 'reasoning' ? 'reasoning' : 'text',
          text: delta,
        });
    }
  } else if (ev.event === 'result') {
    next.finalText = d.finalText ?? d.final_text ?? d.response;
    next.usage = d.usage;
  } else if (ev.event === 'error') {
    next.blocks.push({
      id: `err-${ev.id}`,
      kind: 'error',
      text: `${d.message ?? 'run failed'} (${d.code ?? 'ERROR'})`,
    });
  } else if (ev.event.startsWith('run.') && ev.event !== 'run.queued' && ev.event !== 'run.truncated') {
    next.status = ev.event.slice(4);
  }
  return next;
}

export function Chat({ sandbox }: { sandbox: string }) {
  const [state, setState] = useState<ChatState>(() => load(sandbox));
  const [error, setError] = useState<string>();
  const ref = useRef(state);
  const abort = useRef<AbortController>();
  const update = (f: (s: ChatState) => ChatState) => {
    ref.current = f(ref.current);
    sessionStorage.setItem(key(sandbox), JSON.stringify(ref.current));
    setState(ref.current);
  };
  const follow = async (runId: string) => {
    abort.current?.abort();
    const ctl = new AbortController();
    abort.current = ctl;
    try {
      await api.stream(
        `/api/sandboxes/${sandbox}/runs/${runId}/events`,
        (ev) => update((s) => applyEvent(s, ev)),
        {
          lastEventId: ref.current.lastEventId,
          signal: ctl.signal,
        },
      );
    } catch (e) {
      if (!ctl.signal.aborted) setError(describeError(e));
    }
  };
  useEffect(() => {
    if (state.runId && !state.status) follow(state.runId);
    return () => abort.current?.abort();
  }, []);
  const send = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const message = String(new FormData(form).get('message') ?? '').trim();
    if (!message) return;
    setError(undefined);
    try {
      const r = await api.json<{ run_id: string }>('POST', `/api/sandboxes/${sandbox}/prompt`, { message });
      update(() => ({ runId: r.run_id, prompt: message, blocks: [] }));
      form.reset();
      await follow(r.run_id);
    } catch (err) {
      setError(describeError(err));
    }
  };
  const cancel = async () => {
    try {
      await api.json('POST', `/api/sandboxes/${sandbox}/runs/${state.runId}/cancel`);
    } catch (e) {
      setError(describeError(e));
    }
  };
  const running = Boolean(state.runId && !state.status);
  return <ChatView state={state} error={error} running={running} onSend={send} onCancel={cancel} />;
}

/** The conversation and the prompt form; the plain and the TEE chat differ only in how they run. */
export function ChatView({
  state,
  error,
  running,
  onSend,
  onCancel,
}: {
  state: ChatState;
  error: string | undefined;
  running: boolean;
  onSend: (e: Event) => void;
  onCancel: () => void;
}) {
  return (
    <section aria-label="Agent chat" class="chat">
      {state.prompt && <p class="prompt">› {state.prompt}</p>}
      <div class="blocks" data-testid="chat-blocks" aria-live="polite">
        {state.blocks.map((b) =>
          b.kind === 'tool' ? (
            <details key={b.id} class="block tool" open>
              <summary>
                tool {b.tool?.name} · {b.tool?.status}
              </summary>
              <pre>{JSON.stringify(b.tool?.input, null, 2)}</pre>
              {b.tool?.output !== undefined && (
                <pre class="output">
                  {typeof b.tool.output === 'string' ? b.tool.output : JSON.stringify(b.tool.output, null, 2)}
                </pre>
              )}
            </details>
          ) : (
            <pre key={b.id} class={`block ${b.kind}`} data-testid={`block-${b.kind}`}>
              {b.text}
            </pre>
          ),
        )}
      </div>
      {state.finalText !== undefined && (
        <div class="final" data-testid="final-answer">
          <h3>Answer</h3>
          <pre>{state.finalText}</pre>
        </div>
      )}
      {state.usage && (
        <p class="meta" data-testid="usage">
          tokens: in {state.usage.inputTokens ?? 0} · out {state.usage.outputTokens ?? 0}
          {state.usage.cachedInputTokens ? ` · cached ${state.usage.cachedInputTokens}` : ''}
        </p>
      )}
      {state.status && (
        <p class="meta" data-testid="run-status">
          run {state.status}
        </p>
      )}
      <Err e={error} />
      <form onSubmit={onSend} class="row">
        <label class="grow">
          <span class="sr">Message</span>
          <textarea name="message" rows={2} placeholder="Ask the agent…" data-testid="chat-input" />
        </label>
        <button type="submit" disabled={running} data-testid="chat-send">
          Send
        </button>
        {running && (
          <button type="button" onClick={onCancel} data-testid="chat-cancel">
            Cancel
          </button>
        )}
      </form>
    </section>
  );
}
