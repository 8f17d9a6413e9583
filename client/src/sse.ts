// Server-sent events: an incremental parser (WHATWG event-stream rules) and a reader over fetch
// that reconnects with `Last-Event-ID`, so a dropped stream resumes after the last event seen.
import { ClientError } from './errors.ts';

export interface SseEvent {
  /** The `id:` of this event, or the last id seen before it (per the spec), if any. */
  id: string | undefined;
  /** `event:` field; `message` when absent. */
  event: string;
  data: string;
  retry?: number;
}

/** Feeds text chunks in any split; returns whole events as they complete. */
export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private event = '';
  private hasData = false;
  private pendingCr = false;
  private retry: number | undefined;
  /** Persists across events, like the browser's `lastEventId`. */
  lastEventId: string | undefined;

  constructor(lastEventId?: string) {
    this.lastEventId = lastEventId;
  }

  push(chunk: string): SseEvent[] {
    const out: SseEvent[] = [];
    let text = chunk;
    // A CR at the end of the previous chunk already ended a line; a following LF belongs to it.
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buffer += text;
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.buffer.slice(start, i);
      if (c === 13) {
        if (i + 1 === this.buffer.length) this.pendingCr = true;
        else if (this.buffer.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  /** At end of stream an unterminated event is discarded, as the spec says. */
  end(): void {
    this.buffer = '';
    this.reset();
  }

  private reset(): void {
    this.data = [];
    this.hasData = false;
    this.event = '';
    this.retry = undefined;
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') {
      if (!this.hasData) {
        this.reset();
        return undefined;
      }
      const ev: SseEvent = {
        id: this.lastEventId,
        event: this.event || 'message',
        data: this.data.join('\n'),
      };
      if (this.retry !== undefined) ev.retry = this.retry;
      this.reset();
      return ev;
    }
    if (line.startsWith(':')) return undefined; // comment / keep-alive
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.data.push(value);
        this.hasData = true;
        break;
      case 'event':
        this.event = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
    }
    return undefined;
  }
}

export interface SseStreamOptions {
  /** Headers for every (re)connection, e.g. a fresh Authorization. */
  headers: () => Promise<Record<string, string>> | Record<string, string>;
  fetch?: typeof fetch;
  lastEventId?: string;
  signal?: AbortSignal;
  /**
   * Called when the server ends the stream cleanly. Return true to reconnect (e.g. the run is
   * still going), false to finish. Default: finish.
   */
  onEnd?: () => Promise<boolean> | boolean;
  /** A response that is not a 2xx event stream becomes this error (e.g. 401 → re-login). */
  onHttpError?: (res: Response) => Promise<ClientError | 'retry'>;
  /** Consecutive failed connections allowed before giving up. Default 5. */
  maxRetries?: number;
  /** Backoff base in ms (doubles, capped at 10 s; a server `retry:` overrides). Default 500. */
  retryMs?: number;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Ids ending in a number (`7`, or the operator's `<run_id>:7`) let the client drop anything at or
 * before the last one seen with the same prefix (belt and braces).
 */
function isRepeat(last: string | undefined, id: string | undefined): boolean {
  if (last === undefined || id === undefined) return false;
  const a = /^(.*?)(\d+)$/.exec(last);
  const b = /^(.*?)(\d+)$/.exec(id);
  if (!a || !b || a[1] !== b[1]) return false;
  return BigInt(b[2]!) <= BigInt(a[2]!);
}

/**
 * Reads an SSE endpoint as an async iterator. On a dropped connection (or a clean end that
 * `onEnd` says is premature) it reconnects with `Last-Event-ID` so the server resumes after the
 * last event delivered; events whose numeric id is not after it are skipped.
 */
export async function* readSse(url: string, options: SseStreamOptions): AsyncGenerator<SseEvent> {
  const doFetch = options.fetch ?? fetch;
  const maxRetries = options.maxRetries ?? 5;
  let backoff = options.retryMs ?? 500;
  let lastId = options.lastEventId;
  let failures = 0;
  for (;;) {
    if (options.signal?.aborted) return;
    let res: Response;
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream', ...(await options.headers()) };
      if (lastId !== undefined) headers['last-event-id'] = lastId;
      const init: RequestInit = { headers };
      if (options.signal) init.signal = options.signal;
      res = await doFetch(url, init);
    } catch (e) {
      if (options.signal?.aborted) return;
      if (++failures > maxRetries) {
        throw new ClientError('NETWORK', `lost the event stream at ${url} and could not reconnect; retry`, {
          cause: e,
        });
      }
      await sleep(Math.min(backoff * 2 ** (failures - 1), 10_000), options.signal);
      continue;
    }
    if (!res.ok || !res.body) {
      const verdict = options.onHttpError
        ? await options.onHttpError(res)
        : new ClientError('REMOTE', `event stream answered HTTP ${res.status}`, { status: res.status });
      if (!res.bodyUsed) await res.body?.cancel().catch(() => {});
      if (verdict === 'retry' && ++failures <= maxRetries) continue;
      if (verdict === 'retry') throw new ClientError('REMOTE', `event stream kept failing at ${url}`);
      throw verdict;
    }
    const parser = new SseParser(lastId);
    const decoder = new TextDecoder();
    const reader = res.body.getReader();
    let dropped = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        for (const ev of parser.push(decoder.decode(value, { stream: true }))) {
          if (ev.retry !== undefined) backoff = ev.retry;
          if (isRepeat(lastId, ev.id)) continue;
          failures = 0; // progress resets the retry budget
          lastId = ev.id;
          yield ev;
        }
      }
    } catch (e) {
      if (options.signal?.aborted) return;
      dropped = true;
      if (++failures > maxRetries) {
        throw new ClientError('NETWORK', `lost the event stream at ${url} and could not reconnect; retry`, {
          cause: e,
        });
      }
    } finally {
      reader.releaseLock();
      // Our consumer may have stopped early (break/return): close the connection.
      await res.body.cancel().catch(() => {});
    }
    parser.end();
    if (options.signal?.aborted) return;
    if (dropped) {
      await sleep(Math.min(backoff * 2 ** (failures - 1), 10_000), options.signal);
      continue;
    }
    if (!(await options.onEnd?.())) return;
    if (++failures > maxRetries) throw new ClientError('NETWORK', `event stream at ${url} kept ending early`);
    await sleep(Math.min(backoff, 10_000), options.signal);
  }
}
