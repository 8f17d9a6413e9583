// A TEE sandbox's owner operations over the owner channel (client/src/tee.ts ownerChannel): exec,
// workspace files, agent runs (SSE) and terminals go to the enclave sidecar's own routes, encrypted
// to its attested key and signed by the owner inside, so the operator relays bytes it cannot read.
// The same shapes as OperatorClient's (SandboxOps), so the CLI commands use either.
import type { ChannelClient, ChannelMethod, ChannelResponse } from '@agent-sandbox/attestation';
import type { ExecResult } from './api-types.ts';
import { ClientError, exitCodeFor } from './errors.ts';
import type { ExecOptions, PromptOptions, PromptRun, RunEvent, TerminalOptions } from './operator-client.ts';
import { terminalText } from './operator-client.ts';
import { type SseEvent, SseParser } from './sse.ts';

/** A workspace listing entry (the operator API's FileList shape). */
export interface FileEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  mtime_ms: number;
}
export interface FileList {
  path: string;
  entries: FileEntry[];
  truncated: boolean;
}

/** What `exec`, `files`, `prompt` and `terminal` need: OperatorClient (plain) or TeeSandbox (channel). */
export interface SandboxOps {
  exec(id: string, command: string, options?: ExecOptions): Promise<ExecResult>;
  listFiles(id: string, path: string): Promise<FileList>;
  readFile(id: string, path: string): Promise<Uint8Array>;
  writeFile(id: string, path: string, bytes: Uint8Array): Promise<{ path: string; size: number }>;
  prompt(id: string, message: string, options?: PromptOptions): Promise<PromptRun>;
  createTerminal(id: string, options?: TerminalOptions): Promise<{ terminalId: string }>;
  terminalOutput(id: string, terminalId: string, signal?: AbortSignal): AsyncGenerator<string>;
  terminalInput(id: string, terminalId: string, data: string): Promise<void>;
  resizeTerminal(id: string, terminalId: string, cols: number, rows: number): Promise<void>;
  deleteTerminal(id: string, terminalId: string): Promise<void>;
}

const text = (parts: Uint8Array[]) => Buffer.concat(parts).toString('utf8');

async function* sse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const parser = new SseParser();
  const dec = new TextDecoder();
  for await (const c of body) yield* parser.push(dec.decode(c, { stream: true }));
  parser.end();
}

function toRunEvent(ev: SseEvent): RunEvent {
  let data: unknown = ev.data;
  try {
    data = JSON.parse(ev.data);
  } catch {
    // plain text frame
  }
  return { id: ev.id, event: ev.event, data };
}

export class TeeSandbox implements SandboxOps {
  constructor(private readonly ch: ChannelClient) {}

  /** One request; a status ≥ 400 becomes the sidecar's error (its code and message). */
  async #send(
    method: ChannelMethod,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<ChannelResponse> {
    const r = await this.ch.send(method, path, body, signal);
    if (r.status < 400) return r;
    const parts: Uint8Array[] = [];
    for await (const c of r.body) parts.push(c);
    let code = 'REMOTE';
    let message = text(parts).slice(0, 500) || `the enclave answered ${r.status}`;
    try {
      const e = (JSON.parse(text(parts)) as { error?: { code?: string; message?: string } }).error;
      if (e?.code) code = e.code;
      if (e?.message) message = e.message;
    } catch {
      // not JSON: keep the text
    }
    throw new ClientError(code, `${message} (in the enclave)`, {
      status: r.status,
      exitCode: exitCodeFor(code, r.status),
    });
  }

  async #json<T>(method: ChannelMethod, path: string, body?: unknown): Promise<T> {
    const r = await this.#send(method, path, body);
    const parts: Uint8Array[] = [];
    for await (const c of r.body) parts.push(c);
    try {
      return JSON.parse(text(parts)) as T;
    } catch {
      throw new ClientError('BAD_RESPONSE', `the enclave answered ${method} ${path} with something not JSON`);
    }
  }

  async exec(_id: string, command: string, o: ExecOptions = {}): Promise<ExecResult> {
    if (!command.trim()) throw new ClientError('USAGE', 'exec needs a non-empty command');
    const r = await this.#json<{ result: { exitCode: number; stdout: string; stderr: string } }>(
      'POST',
      '/terminals/commands',
      {
        command,
        ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
        ...(o.env !== undefined ? { env: o.env } : {}),
        ...(o.timeoutMs !== undefined ? { timeout_ms: o.timeoutMs } : {}),
      },
    );
    return { exit_code: r.result.exitCode, stdout: r.result.stdout, stderr: r.result.stderr };
  }

  async listFiles(_id: string, path: string): Promise<FileList> {
    const r = await this.#json<{
      data: { path: string; entries: Array<FileEntry & { mtimeMs?: number }>; truncated?: boolean };
    }>('POST', '/files/list', { path });
    return {
      path: r.data.path,
      entries: r.data.entries.map((e) => ({
        name: e.name,
        type: e.type,
        size: e.size,
        mtime_ms: Math.trunc(e.mtimeMs ?? 0),
      })),
      truncated: r.data.truncated === true,
    };
  }

  async readFile(_id: string, path: string): Promise<Uint8Array> {
    const r = await this.#json<{ data: { content: string } }>('POST', '/files/read', {
      path,
      encoding: 'base64',
    });
    return new Uint8Array(Buffer.from(r.data.content, 'base64'));
  }

  async writeFile(_id: string, path: string, bytes: Uint8Array): Promise<{ path: string; size: number }> {
    const r = await this.#json<{ data: { size?: number } }>('POST', '/files/write', {
      path,
      content: Buffer.from(bytes).toString('base64'),
      encoding: 'base64',
    });
    return { path, size: r.data.size ?? bytes.length };
  }

  /**
   * An agent run streamed straight from the enclave (POST /agents/run/stream): no run record on
   * the operator, so no resume after a dropped link; cancel stops the session's runs.
   */
  async prompt(_id: string, message: string, o: PromptOptions = {}): Promise<PromptRun> {
    if (!message.trim()) throw new ClientError('USAGE', 'prompt needs a non-empty message');
    const body = {
      message,
      ...(o.sessionId !== undefined ? { sessionId: o.sessionId } : {}),
      ...(o.backendType !== undefined || o.model !== undefined
        ? {
            backend: {
              ...(o.backendType !== undefined ? { type: o.backendType } : {}),
              ...(o.model !== undefined ? { model: o.model } : {}),
            },
          }
        : {}),
      ...(o.timeoutMs !== undefined ? { timeout_ms: o.timeoutMs } : {}),
    };
    // The run is this one stream: hanging it up (events' signal) cancels the run in the enclave.
    const hangUp = new AbortController();
    const r = await this.#send('POST', '/agents/run/stream', body, hangUp.signal);
    const run: PromptRun = {
      runId: 'enclave',
      sessionId: o.sessionId,
      status: 'running',
      events: async function* (opts = {}) {
        const onAbort = () => hangUp.abort();
        opts.signal?.addEventListener('abort', onAbort, { once: true });
        try {
          for await (const ev of sse(r.body)) {
            const e = toRunEvent(ev);
            const sid = (e.data as { sessionId?: unknown } | null)?.sessionId;
            if (e.event === 'execution.started' && typeof sid === 'string') run.sessionId = sid;
            yield e;
          }
        } catch (e) {
          if (!hangUp.signal.aborted) throw e;
        } finally {
          opts.signal?.removeEventListener('abort', onAbort);
        }
      },
      cancel: async () => {
        hangUp.abort();
        await this.#json('POST', '/agents/run/cancel', run.sessionId ? { sessionId: run.sessionId } : {});
      },
    };
    return run;
  }

  async createTerminal(_id: string, o: TerminalOptions = {}): Promise<{ terminalId: string }> {
    const r = await this.#json<{ sessionId?: string; data?: { sessionId?: string } }>(
      'POST',
      '/terminals',
      o,
    );
    const terminalId = r.sessionId ?? r.data?.sessionId;
    if (!terminalId) throw new ClientError('BAD_RESPONSE', 'the enclave created a terminal without an id');
    return { terminalId };
  }

  async *terminalOutput(_id: string, tid: string, signal?: AbortSignal): AsyncGenerator<string> {
    const r = await this.#send('GET', `/terminals/${encodeURIComponent(tid)}/stream`, undefined, signal);
    try {
      for await (const ev of sse(r.body)) {
        const t = terminalText(ev);
        if (t !== undefined) yield t;
      }
    } catch (e) {
      // Leaving (Ctrl-]) hangs the stream up: the relay's connection closes, the enclave unsubscribes.
      if (!signal?.aborted) throw e;
    }
  }

  async terminalInput(_id: string, tid: string, data: string): Promise<void> {
    await this.#json('POST', `/terminals/${encodeURIComponent(tid)}/input`, { data });
  }

  async resizeTerminal(_id: string, tid: string, cols: number, rows: number): Promise<void> {
    await this.#json('PATCH', `/terminals/${encodeURIComponent(tid)}`, { cols, rows });
  }

  async deleteTerminal(_id: string, tid: string): Promise<void> {
    await this.#json('DELETE', `/terminals/${encodeURIComponent(tid)}`).catch(() => {});
  }
}
