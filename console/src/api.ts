// The operator API from the browser: fetch with the Authorization header (never a token in a URL),
// errors carrying code, message and request id, and SSE read from a fetch body stream (no
// EventSource, which cannot send the header), resumable with Last-Event-ID.
import { type SseEvent, SseParser } from './sse.ts';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | undefined,
  ) {
    super(message);
  }
  /** One line for the UI: what failed, and the request id to quote when asking the operator. */
  describe(): string {
    const who = this.status === 403 ? 'Not yours: ' : '';
    return `${who}${this.message} (${this.code}, HTTP ${this.status}${this.requestId ? `, request ${this.requestId}` : ''})`;
  }
}

export type { SseEvent };

const TOKEN_KEY = 'agent-sandbox.session';

export class Api {
  token: string | undefined = sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  address: string | undefined = sessionStorage.getItem(`${TOKEN_KEY}.address`) ?? undefined;
  constructor(readonly base = '') {}

  setSession(token: string | undefined, address?: string): void {
    this.token = token;
    this.address = address;
    if (token && address) {
      sessionStorage.setItem(TOKEN_KEY, token);
      sessionStorage.setItem(`${TOKEN_KEY}.address`, address);
    } else {
      sessionStorage.removeItem(TOKEN_KEY);
      sessionStorage.removeItem(`${TOKEN_KEY}.address`);
    }
  }

  async raw(method: string, path: string, body?: BodyInit | object, headers: Record<string, string> = {}) {
    const h: Record<string, string> = { ...headers };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    let payload: BodyInit | undefined;
    if (body instanceof Blob || body instanceof ArrayBuffer || body instanceof Uint8Array) {
      payload = body as BodyInit;
      h['content-type'] ??= 'application/octet-stream';
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      h['content-type'] = 'application/json';
    }
    const res = await fetch(`${this.base}${path}`, { method, headers: h, body: payload });
    if (!res.ok) throw await toError(res);
    return res;
  }

  async json<T = unknown>(method: string, path: string, body?: object): Promise<T> {
    const res = await this.raw(method, path, body);
    return (res.status === 204 ? undefined : await res.json()) as T;
  }

  /** Reads an SSE stream until it ends or `signal` aborts; each event is handed over as it arrives. */
  async stream(
    path: string,
    onEvent: (e: SseEvent) => void,
    o: { lastEventId?: string; signal?: AbortSignal } = {},
  ): Promise<void> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (o.lastEventId) headers['last-event-id'] = o.lastEventId;
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const res = await fetch(`${this.base}${path}`, { headers, signal: o.signal });
    if (!res.ok || !res.body) throw await toError(res);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new SseParser();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        for (const ev of parser.push(value)) onEvent(ev);
      }
    } finally {
      reader.releaseLock();
    }
  }
}

async function toError(res: Response): Promise<ApiError> {
  const rid = res.headers.get('x-request-id') ?? undefined;
  try {
    const j = (await res.json()) as { error?: { code?: string; message?: string; request_id?: string } };
    return new ApiError(
      res.status,
      j.error?.code ?? 'HTTP_ERROR',
      j.error?.message ?? res.statusText,
      j.error?.request_id ?? rid,
    );
  } catch {
    return new ApiError(res.status, 'HTTP_ERROR', res.statusText || 'request failed', rid);
  }
}

export function describeError(e: unknown): string {
  if (e instanceof ApiError) return e.describe();
  const m = e instanceof Error ? ((e as { shortMessage?: string }).shortMessage ?? e.message) : String(e);
  return m;
}
