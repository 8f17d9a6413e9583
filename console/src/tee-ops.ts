// A verified TEE session and the owner operations over it: every request is encrypted in this page
// to the enclave key the Attestation tab verified, signed inside by the wallet (one EIP-4361
// message an hour), and POSTed to the operator's blind relay (…/tee/channel); answers come back
// as sealed chunks only this page opens. The same routes and shapes as the CLI's --tee
// (client/src/tee-sandbox.ts): exec, files, agent runs (SSE), terminals and sealed secrets.
// Loaded with the first check (it carries the HPKE and SIWE code).
import {
  ChannelClient,
  type ChannelMethod,
  type ChannelResponse,
  type SealedBody,
  sealSecrets,
} from '@agent-sandbox/attestation/browser';
import { ApiError } from './api.ts';
import { api } from './main.tsx';
import { type SseEvent, SseParser } from './sse.ts';

const dec = new TextDecoder();
const text = async (body: AsyncIterable<Uint8Array>) => {
  let out = '';
  for await (const c of body) out += dec.decode(c, { stream: true });
  return out + dec.decode();
};

/** SSE events from a decrypted body, as they arrive. */
export async function* sseEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const d = new TextDecoder();
  const parser = new SseParser();
  for await (const c of body) yield* parser.push(d.decode(c, { stream: true }));
}

const toBase64 = (b: Uint8Array) => {
  let s = '';
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
};
const fromBase64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

export interface TeeEntry {
  name: string;
  type: string;
  size: number;
}

export class TeeOps {
  readonly #ch: ChannelClient;
  constructor(
    readonly sandboxId: string,
    private readonly key: { pubkey: Uint8Array; ctx: string },
    signMessage: (message: string) => Promise<`0x${string}`>,
  ) {
    this.#ch = new ChannelClient({
      pubkey: key.pubkey,
      ctx: key.ctx,
      address: api.address as `0x${string}`,
      signMessage,
      // The operator's relay: it sees a sealed message and its size, nothing inside.
      relay: async (bytes, type, signal) => {
        const r = await fetch(`/api/sandboxes/${encodeURIComponent(sandboxId)}/tee/channel`, {
          method: 'POST',
          headers: { 'content-type': type, authorization: `Bearer ${api.token ?? ''}` },
          body: bytes as BodyInit,
          ...(signal ? { signal } : {}),
        });
        return r;
      },
    });
  }

  /**
   * One round trip that also proves the enclave takes your signature (the wallet signs here). On
   * both backends: a relay that refuses the channel is an error, never a reason to use the
   * operator's plain routes (where the host could read and replay what is sent).
   */
  async probe(): Promise<void> {
    await this.json('GET', '/health');
  }

  /** One request; an enclave status ≥ 400 becomes an ApiError naming the enclave. */
  async send(
    method: ChannelMethod,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<ChannelResponse> {
    const r = await this.#ch.send(method, path, body, signal);
    if (r.status < 400) return r;
    const t = await text(r.body);
    let code = 'REMOTE';
    let message = t.slice(0, 300) || `the enclave answered ${r.status}`;
    try {
      const e = (JSON.parse(t) as { error?: { code?: string; message?: string } }).error;
      if (e?.code) code = e.code;
      if (e?.message) message = e.message;
    } catch {
      // not JSON: keep the text
    }
    throw new ApiError(r.status, code, `${message} (in the enclave)`, undefined);
  }

  async json<T>(method: ChannelMethod, path: string, body?: unknown): Promise<T> {
    const t = await text((await this.send(method, path, body)).body);
    return (t ? JSON.parse(t) : undefined) as T;
  }

  async exec(command: string): Promise<{ exit_code: number; stdout: string; stderr: string }> {
    const r = await this.json<{ result: { exitCode: number; stdout: string; stderr: string } }>(
      'POST',
      '/terminals/commands',
      { command },
    );
    return { exit_code: r.result.exitCode, stdout: r.result.stdout, stderr: r.result.stderr };
  }

  async list(path: string): Promise<{ path: string; entries: TeeEntry[] }> {
    const r = await this.json<{ data: { path: string; entries: TeeEntry[] } }>('POST', '/files/list', {
      path,
    });
    return r.data;
  }

  async read(path: string): Promise<Uint8Array> {
    const r = await this.json<{ data: { content: string } }>('POST', '/files/read', {
      path,
      encoding: 'base64',
    });
    return fromBase64(r.data.content);
  }

  async write(path: string, bytes: Uint8Array): Promise<void> {
    await this.json('POST', '/files/write', { path, content: toBase64(bytes), encoding: 'base64' });
  }

  /** Sealed to the verified key in this page: the relay and the operator see only ciphertext. */
  async setSecrets(env: Record<string, string>): Promise<{ success: boolean; secrets_count?: number }> {
    const body: SealedBody = sealSecrets(this.key.pubkey, this.key.ctx, this.sandboxId, env);
    return this.json('POST', '/tee/sealed-secrets', body);
  }

  /** An agent run streamed from the enclave; aborting `signal` hangs up, which cancels it there. */
  async *run(message: string, signal: AbortSignal): AsyncGenerator<SseEvent> {
    const r = await this.send('POST', '/agents/run/stream', { message }, signal);
    try {
      yield* sseEvents(r.body);
    } catch (e) {
      if (!signal.aborted) throw e;
    }
  }

  async createTerminal(cols: number, rows: number): Promise<string> {
    const r = await this.json<{ sessionId?: string; data?: { sessionId?: string } }>('POST', '/terminals', {
      cols,
      rows,
    });
    const id = r.sessionId ?? r.data?.sessionId;
    if (!id) throw new Error('the enclave created a terminal without an id');
    return id;
  }
  /** The PTY's output frames until the stream ends or `signal` hangs it up. */
  async *terminalEvents(id: string, signal: AbortSignal): AsyncGenerator<SseEvent> {
    const r = await this.send('GET', `/terminals/${encodeURIComponent(id)}/stream`, undefined, signal);
    try {
      yield* sseEvents(r.body);
    } catch (e) {
      if (!signal.aborted) throw e;
    }
  }
  async terminalInput(id: string, data: string): Promise<void> {
    await this.json('POST', `/terminals/${encodeURIComponent(id)}/input`, { data });
  }
  async resizeTerminal(id: string, cols: number, rows: number): Promise<void> {
    await this.json('PATCH', `/terminals/${encodeURIComponent(id)}`, { cols, rows });
  }
  async deleteTerminal(id: string): Promise<void> {
    await this.json('DELETE', `/terminals/${encodeURIComponent(id)}`);
  }
}
