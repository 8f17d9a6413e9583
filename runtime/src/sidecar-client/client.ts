// Client for one sandbox's sidecar (see spec/sidecar-api.md): bearer auth, per-operation timeouts,
// x-request-id forwarding, bounded responses, and a per-sandbox circuit breaker.
import type { Dispatcher } from 'undici';
import { RuntimeError } from '../errors.ts';
import type { CircuitBreaker } from './circuit-breaker.ts';
import { Deadline, isSidecarHealthFailure, readBounded, statusError, transportError } from './http.ts';
import { socketDispatcher } from './socket.ts';
import { parseSse, type SseEvent } from './sse.ts';
import type {
  AgentRunRequest,
  AgentRunResult,
  ExecRequest,
  ExecResult,
  Json,
  TerminalCreateRequest,
} from './wire-types.ts';

export interface SidecarTimeouts {
  exec: number;
  agent: number;
  task: number;
  default: number;
}

export const DEFAULT_SIDECAR_TIMEOUTS: SidecarTimeouts = {
  exec: 30_000,
  agent: 600_000,
  task: 1_800_000,
  default: 60_000,
};

export type SidecarOperation = keyof SidecarTimeouts;

export interface SidecarEndpoint {
  /** Circuit-breaker key. */
  sandboxId: string;
  /** e.g. http://127.0.0.1:49153 — loopback only unless allowNonLoopback. */
  baseUrl: string;
  /** The sandbox's SIDECAR_AUTH_TOKEN. Never logged, never in an error. */
  token: string;
  /**
   * Transport: HTTP over this Unix socket instead of TCP to baseUrl's host (a sandbox without a
   * network, SANDBOX_EGRESS=none); baseUrl then only names the Host header.
   */
  socketPath?: string;
}

export interface SidecarClientOptions {
  /** Shared across clients so one breaker entry tracks each sandbox. Omit for no breaker. */
  breaker?: CircuitBreaker;
  timeouts?: Partial<SidecarTimeouts>;
  /** Largest JSON answer accepted. Default 8 MiB. */
  maxResponseBytes?: number;
  /** Largest single SSE event accepted. Default 6 MiB. */
  maxEventBytes?: number;
  /** Permit non-loopback sidecar addresses (remote backends). Default false. */
  allowNonLoopback?: boolean;
}

export interface CallOptions {
  requestId?: string;
  /** Overrides the operation's timeout. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Go through the circuit breaker (default true; health checks default to false). */
  breaker?: boolean;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
/**
 * The one place `timeoutMs` becomes the wire's `timeout_ms`. Sidecars released before the rename
 * read only `timeout` (and ignore unknown fields), so it is sent too, for one version, keeping
 * containers started from an older image working after an operator upgrade.
 */
function toWire<T extends { timeoutMs?: number }>(req: T): Omit<T, 'timeoutMs'> & Json {
  const { timeoutMs, ...rest } = req;
  return timeoutMs === undefined ? rest : { ...rest, timeout_ms: timeoutMs, timeout: timeoutMs };
}

/** Room for the sidecar to report a command's own timeout before our HTTP deadline fires. */
const EXEC_GRACE_MS = 5_000;

export class SidecarClient {
  readonly sandboxId: string;
  readonly #base: string;
  readonly #token: string;
  readonly #breaker: CircuitBreaker | undefined;
  readonly #timeouts: SidecarTimeouts;
  readonly #maxBytes: number;
  readonly #maxEvent: number;
  readonly #dispatcher: Dispatcher | undefined;

  constructor(endpoint: SidecarEndpoint, opts: SidecarClientOptions = {}) {
    let url: URL;
    try {
      url = new URL(endpoint.baseUrl);
    } catch {
      throw new RuntimeError('CONFIG_INVALID', 'sidecar baseUrl must be an absolute http URL');
    }
    const loopback = LOOPBACK.has(url.hostname) || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new RuntimeError('CONFIG_INVALID', 'sidecar baseUrl must use http or https');
    }
    if (!loopback && !opts.allowNonLoopback) {
      throw new RuntimeError(
        'CONFIG_INVALID',
        'sidecar baseUrl must be a loopback address (ports are published on 127.0.0.1)',
      );
    }
    if (typeof endpoint.token !== 'string' || endpoint.token.length === 0) {
      throw new RuntimeError('CONFIG_INVALID', 'sidecar token is missing');
    }
    this.sandboxId = endpoint.sandboxId;
    this.#base = url.origin;
    this.#token = endpoint.token;
    this.#breaker = opts.breaker;
    this.#timeouts = { ...DEFAULT_SIDECAR_TIMEOUTS, ...opts.timeouts };
    this.#maxBytes = opts.maxResponseBytes ?? 8 * 1024 * 1024;
    // A sidecar's `result` carries its whole final text twice (finalText, response): up to 2 ×
    // SIDECAR_OUTPUT_LIMIT_BYTES (1 MiB) plus JSON escaping; 1 MiB failed every such run.
    this.#maxEvent = opts.maxEventBytes ?? 6 * 1024 * 1024;
    this.#dispatcher = endpoint.socketPath ? socketDispatcher(endpoint.socketPath) : undefined;
  }

  // ---- routes ----

  health(o: CallOptions = {}): Promise<{ status: string; timestamp?: unknown }> {
    return this.request('default', 'GET', '/health', undefined, { breaker: false, ...o });
  }

  async exec(req: ExecRequest, o: CallOptions = {}): Promise<ExecResult> {
    const timeoutMs = o.timeoutMs ?? Math.max(this.#timeouts.exec, (req.timeoutMs ?? 0) + EXEC_GRACE_MS);
    const res = await this.request<Json & { result?: ExecResult }>(
      'exec',
      'POST',
      '/terminals/commands',
      toWire(req),
      { ...o, timeoutMs },
    );
    const r = (res.result ?? res) as Partial<ExecResult>;
    if (typeof r.exitCode !== 'number' || typeof r.stdout !== 'string' || typeof r.stderr !== 'string') {
      throw new RuntimeError('SIDECAR_ERROR', 'the sidecar answered exec without exitCode/stdout/stderr');
    }
    return {
      exitCode: r.exitCode,
      stdout: r.stdout,
      stderr: r.stderr,
      ...(typeof r.duration === 'number' ? { duration: r.duration } : {}),
    };
  }

  listAgents(o: CallOptions = {}): Promise<Json> {
    return this.request('default', 'GET', '/agents', undefined, o);
  }

  /** A blocking agent run; `kind: 'task'` gets the 30-minute budget instead of 10. */
  runAgent(req: AgentRunRequest, o: CallOptions & { kind?: 'agent' | 'task' } = {}): Promise<AgentRunResult> {
    return this.request(o.kind ?? 'agent', 'POST', '/agents/run', toWire(req), o);
  }

  /** The run's SSE events (execution.started, message.part.updated, result, error). */
  streamAgent(
    req: AgentRunRequest,
    o: CallOptions & { kind?: 'agent' | 'task' } = {},
  ): AsyncGenerator<SseEvent> {
    return this.stream(o.kind ?? 'agent', 'POST', '/agents/run/stream', toWire(req), o, true);
  }

  cancelAgent(o: CallOptions = {}): Promise<Json> {
    return this.request('default', 'POST', '/agents/run/cancel', {}, o);
  }

  createTerminal(req: TerminalCreateRequest = {}, o: CallOptions = {}): Promise<Json> {
    return this.request('default', 'POST', '/terminals', req, o);
  }

  listTerminals(o: CallOptions = {}): Promise<Json> {
    return this.request('default', 'GET', '/terminals', undefined, o);
  }

  getTerminal(id: string, o: CallOptions = {}): Promise<Json> {
    return this.request('default', 'GET', `/terminals/${seg(id)}`, undefined, o);
  }

  resizeTerminal(id: string, size: { cols: number; rows: number }, o: CallOptions = {}): Promise<Json> {
    return this.request('default', 'PATCH', `/terminals/${seg(id)}`, size, o);
  }

  deleteTerminal(id: string, o: CallOptions = {}): Promise<Json> {
    return this.request('default', 'DELETE', `/terminals/${seg(id)}`, undefined, o);
  }

  terminalInput(id: string, data: string, o: CallOptions = {}): Promise<Json> {
    return this.request('default', 'POST', `/terminals/${seg(id)}/input`, { data }, o);
  }

  terminalExecute(id: string, command: string, o: CallOptions = {}): Promise<Json> {
    return this.request('default', 'POST', `/terminals/${seg(id)}/execute`, { command }, o);
  }

  /** PTY output as JSON frames; runs until the terminal exits or `o.signal` aborts. */
  streamTerminal(id: string, o: CallOptions = {}): AsyncGenerator<SseEvent> {
    return this.stream('default', 'GET', `/terminals/${seg(id)}/stream`, undefined, o, false);
  }

  readFile(
    path: string,
    o: CallOptions & { encoding?: 'utf8' | 'base64' } = {},
  ): Promise<{ content: string; encoding?: string; size?: number }> {
    return this.request<Json & { data?: { content?: unknown } }>(
      'default',
      'POST',
      '/files/read',
      { path, ...(o.encoding ? { encoding: o.encoding } : {}) },
      o,
    ).then((r) => {
      if (typeof r.data?.content !== 'string') {
        throw new RuntimeError('SIDECAR_ERROR', 'the sidecar answered files/read without content');
      }
      return r.data as { content: string; encoding?: string; size?: number };
    });
  }

  /** The entries of a workspace directory ('' is the workspace root); symlinks reported, not followed. */
  listFiles(
    path: string,
    o: CallOptions = {},
  ): Promise<{
    path: string;
    entries: { name: string; type: string; size: number; mtimeMs: number }[];
    truncated: boolean;
  }> {
    return this.request<Json & { data?: unknown }>('default', 'POST', '/files/list', { path }, o).then(
      (r) => {
        const d = r.data as { path?: unknown; entries?: unknown; truncated?: unknown } | undefined;
        if (!d || typeof d.path !== 'string' || !Array.isArray(d.entries)) {
          throw new RuntimeError('SIDECAR_ERROR', 'the sidecar answered files/list without entries');
        }
        return d as { path: string; entries: []; truncated: boolean };
      },
    );
  }

  writeFile(
    path: string,
    content: string,
    o: CallOptions & { encoding?: 'utf8' | 'base64' } = {},
  ): Promise<{ hash?: string; size?: number }> {
    return this.request<Json & { data?: { hash?: string; size?: number } }>(
      'default',
      'POST',
      '/files/write',
      { path, content, ...(o.encoding ? { encoding: o.encoding } : {}) },
      o,
    ).then((r) => r.data ?? {});
  }

  // ---- core ----

  /** One JSON call. Public so new sidecar routes need no client change. */
  async request<T>(
    op: SidecarOperation,
    method: string,
    path: string,
    body: unknown,
    o: CallOptions = {},
  ): Promise<T> {
    const call = async (): Promise<T> => {
      const timeoutMs = o.timeoutMs ?? this.#timeouts[op];
      const deadline = new Deadline(timeoutMs, o.signal);
      try {
        const res = await fetch(`${this.#base}${path}`, this.#init(method, body, o, deadline.signal));
        const bytes = await readBounded(res.body, this.#maxBytes);
        const text = new TextDecoder().decode(bytes);
        if (!res.ok) throw statusError(res.status, text, this.#redact);
        try {
          return JSON.parse(text) as T;
        } catch {
          throw new RuntimeError('SIDECAR_ERROR', `the sidecar answered ${path} with invalid JSON`);
        }
      } catch (e) {
        throw transportError(e, { op: path, timeoutMs, deadline, callerSignal: o.signal });
      } finally {
        deadline.clear();
      }
    };
    return this.#guarded(o, call);
  }

  /**
   * An SSE call. The breaker judges the connection (headers); `overall` keeps the deadline running
   * for the whole stream (agent runs), otherwise it stops once the stream is open (terminals).
   */
  async *stream(
    op: SidecarOperation,
    method: string,
    path: string,
    body: unknown,
    o: CallOptions,
    overall: boolean,
  ): AsyncGenerator<SseEvent> {
    const timeoutMs = o.timeoutMs ?? this.#timeouts[op];
    const deadline = new Deadline(timeoutMs, o.signal);
    const ctx = { op: path, timeoutMs, deadline, callerSignal: o.signal };
    try {
      const res = await this.#guarded(o, async () => {
        try {
          const r = await fetch(`${this.#base}${path}`, {
            ...this.#init(method, body, o, deadline.signal),
          });
          if (!r.ok)
            throw statusError(
              r.status,
              new TextDecoder().decode(await readBounded(r.body, 64 * 1024)),
              this.#redact,
            );
          return r;
        } catch (e) {
          throw transportError(e, ctx);
        }
      });
      if (!overall) deadline.clear();
      if (!res.body) return;
      try {
        yield* parseSse(res.body as AsyncIterable<Uint8Array>, this.#maxEvent);
      } catch (e) {
        if (e instanceof Error && /exceeds/.test(e.message) && !(e instanceof RuntimeError)) {
          throw new RuntimeError('SIDECAR_ERROR', `a sidecar stream ${e.message}`);
        }
        throw transportError(e, ctx);
      }
    } finally {
      deadline.abort();
    }
  }

  #guarded<T>(o: CallOptions, fn: () => Promise<T>): Promise<T> {
    if (!this.#breaker || o.breaker === false) return fn();
    return this.#breaker.run(this.sandboxId, fn, isSidecarHealthFailure);
  }

  #init(method: string, body: unknown, o: CallOptions, signal: AbortSignal): RequestInit {
    const headers: Record<string, string> = { authorization: `Bearer ${this.#token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (o.requestId) headers['x-request-id'] = o.requestId;
    return {
      method,
      headers,
      signal,
      redirect: 'manual',
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      ...(this.#dispatcher ? { dispatcher: this.#dispatcher } : {}),
    } as RequestInit;
  }

  readonly #redact = (s: string): string =>
    s.includes(this.#token) ? s.split(this.#token).join('[redacted]') : s;
}

function seg(id: string): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > 256) {
    throw new RuntimeError('VALIDATION', 'terminal id must be a non-empty string');
  }
  return encodeURIComponent(id);
}
