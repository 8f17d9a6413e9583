// Turns a run's stdout into parts: a harness's JSON events (text and reasoning deltas, tool calls
// and their output, usage, its session id) or, for a plain command, coalesced text deltas.
import { StringDecoder } from 'node:string_decoder';
import type { HarnessName } from './harness.ts';
import {
  addUsage,
  type HarnessEvent,
  parseHarnessLine,
  type RunUsage,
  type ToolCall,
} from './harness-events.ts';

const PART_INTERVAL_MS = 50;
const MAX_PENDING_LINE = 64 * 1024;
/** A JSON event line longer than this is dropped, not buffered without bound. */
const MAX_EVENT_LINE = 8 * 1024 * 1024;

/**
 * One streamed piece of a part. Text and reasoning parts: `text` (and `content`, the same) hold only
 * what is new since the part's previous event. Tool parts: `tool` is the call's whole current state
 * (one event when it starts, one when its output arrives, same id).
 */
export interface AgentPart {
  id: string;
  type: 'text' | 'reasoning' | 'tool';
  text: string;
  content: string;
  state?: 'running' | 'completed';
  tool?: ToolCall;
}

export interface StreamOutcome {
  finalText: string;
  usage: RunUsage;
  /** The harness's own session id, when it reported one. */
  harnessSessionId?: string;
  model?: string;
  /** The error the harness reported in its events (the run fails with it). */
  error?: string;
}

export class RunStream {
  readonly #decoder = new StringDecoder('utf8');
  #pending = '';
  #usage: RunUsage = { inputTokens: 0, outputTokens: 0 };
  #final: string | undefined;
  /** The text since the last tool call: the final answer when the harness states none. */
  #segment = '';
  #segmentId = '';
  #seq = 0;
  #session: string | undefined;
  #model: string | undefined;
  #error: string | undefined;
  readonly #tools = new Map<string, ToolCall>();
  // Plain-text mode: deltas coalesced to one event per PART_INTERVAL_MS.
  #text = '';
  #emitted = 0;
  #lastEmit = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly harness: HarnessName | 'custom',
    private readonly partId: string,
    private readonly limit: number,
    private readonly onPart: (p: AgentPart) => void,
  ) {}

  write(chunk: Buffer): void {
    this.#pending += this.#decoder.write(chunk);
    if (this.harness === 'custom') {
      this.#plain(false);
      return;
    }
    let nl = this.#pending.indexOf('\n');
    while (nl >= 0) {
      this.#line(this.#pending.slice(0, nl));
      this.#pending = this.#pending.slice(nl + 1);
      nl = this.#pending.indexOf('\n');
    }
    if (this.#pending.length > MAX_EVENT_LINE) this.#pending = '';
  }

  /** Flushes what is left and returns the run's outcome (`ok`: the process succeeded). */
  end(ok: boolean): StreamOutcome {
    this.#pending += this.#decoder.end();
    clearTimeout(this.#timer);
    if (this.harness === 'custom') {
      this.#plain(true);
      if (ok) this.#emitText('completed');
      return { finalText: this.#text.trim(), usage: this.#usage };
    }
    if (this.#pending) this.#line(this.#pending);
    this.#pending = '';
    return {
      finalText: (this.#final ?? this.#segment).trim().slice(0, this.limit),
      usage: this.#usage,
      ...(this.#session ? { harnessSessionId: this.#session } : {}),
      ...(this.#model ? { model: this.#model } : {}),
      ...(this.#error ? { error: this.#error } : {}),
    };
  }

  cancel(): void {
    clearTimeout(this.#timer);
  }

  #line(line: string): void {
    for (const e of parseHarnessLine(this.harness as HarnessName, line)) this.#event(e);
  }

  #event(e: HarnessEvent): void {
    switch (e.kind) {
      case 'text':
      case 'reasoning': {
        if (!e.delta) return;
        let id = e.id;
        if (e.kind === 'text') {
          // Deltas without an id of their own belong to the current text segment.
          if (!id) id = this.#segmentId || `${this.partId}_${this.#seq++}`;
          if (id !== this.#segmentId) this.#segment = '';
          this.#segmentId = id;
          if (this.#segment.length < this.limit) this.#segment += e.delta;
        }
        this.onPart({ id, type: e.kind, text: e.delta, content: e.delta, state: 'running' });
        return;
      }
      case 'tool': {
        const prev = this.#tools.get(e.id);
        const tool: ToolCall = {
          ...e.tool,
          name: e.tool.name || prev?.name || 'tool',
          input: e.tool.input ?? prev?.input ?? {},
        };
        if (tool.output !== undefined && tool.output.length > this.limit) {
          tool.output = tool.output.slice(0, this.limit);
        }
        if (prev && prev.status !== 'running' && tool.status === 'running') return;
        this.#tools.set(e.id, tool);
        this.#segment = '';
        this.#segmentId = '';
        this.onPart({ id: e.id, type: 'tool', text: '', content: '', tool });
        return;
      }
      case 'session':
        this.#session = e.id;
        return;
      case 'model':
        this.#model = e.model;
        return;
      case 'usage':
        this.#usage = addUsage(this.#usage, e.usage);
        return;
      case 'final':
        this.#final = e.text;
        return;
      case 'error':
        this.#error = e.message || 'the agent harness reported an error';
        return;
    }
  }

  // ---- plain text (SIDECAR_AGENT_COMMAND) ----

  #plain(final: boolean): void {
    let nl = this.#pending.lastIndexOf('\n');
    // A very long line without a newline is passed on anyway rather than held without bound.
    if (!final && nl < 0 && this.#pending.length >= MAX_PENDING_LINE) nl = this.#pending.length - 1;
    if (final) nl = this.#pending.length - 1;
    if (nl < 0) return;
    // Whole lines only, so a client never renders half a line; accumulated text is capped like exec output.
    if (this.#text.length < this.limit) {
      this.#text = (this.#text + this.#pending.slice(0, nl + 1)).slice(0, this.limit);
    }
    this.#pending = this.#pending.slice(nl + 1);
    if (!final) this.#schedule();
  }

  #emitText(state: AgentPart['state']): void {
    const delta = this.#text.slice(this.#emitted);
    this.#emitted = this.#text.length;
    this.#lastEmit = Date.now();
    this.onPart({ id: this.partId, type: 'text', text: delta, content: delta, state });
  }

  #schedule(): void {
    if (this.#timer) return;
    const flush = () => {
      this.#timer = undefined;
      if (this.#text.length > this.#emitted) this.#emitText('running');
    };
    const wait = PART_INTERVAL_MS - (Date.now() - this.#lastEmit);
    if (wait <= 0) flush();
    else this.#timer = setTimeout(flush, wait);
  }
}
