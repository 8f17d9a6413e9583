// The owner's end of the channel (CLI and browser alike): each call is one encapsulated request
// to the attested key, POSTed to a relay (the operator API), and one chunked response read as it
// streams. The owner signs one SIWE message per session; it travels inside the encryption only.
import { concatBytes, utf8 } from './bytes.ts';
import { CHANNEL_REQUEST_TYPE, encapsulateRequest } from './channel.ts';
import { type ChannelResponseHead, type OwnerAuth, ownerChannelMessage } from './channel-owner.ts';
import { AttestationError } from './errors.ts';

export type ChannelMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ChannelClientOptions {
  /** The enclave key the caller verified (attestation bound to ctx and its own nonce). */
  pubkey: Uint8Array;
  ctx: string;
  address: `0x${string}`;
  signMessage(message: string): Promise<`0x${string}`>;
  /** POSTs the encapsulated bytes to the relay and returns its response (body streamed); `signal` ends it. */
  relay(message: Uint8Array, contentType: string, signal?: AbortSignal): Promise<Response>;
  nowMs?: () => number;
}

export interface ChannelResponse {
  status: number;
  type: string;
  /** The body, chunk by chunk as the enclave sent it; throws if the relay tampered or cut it. */
  body: AsyncIterable<Uint8Array>;
}

export class ChannelClient {
  #auth: { auth: OwnerAuth; until: number } | undefined;
  constructor(private readonly o: ChannelClientOptions) {}

  async #session(now: number): Promise<OwnerAuth> {
    if (this.#auth && this.#auth.until - 60_000 > now) return this.#auth.auth;
    const message = ownerChannelMessage({
      ctx: this.o.ctx,
      pubkey: this.o.pubkey,
      address: this.o.address,
      nowMs: now,
    });
    const auth = { message, signature: await this.o.signMessage(message) };
    this.#auth = { auth, until: now + 3_600_000 };
    return auth;
  }

  /** One request; resolves once the response head (status, type) is in. `signal` hangs up (a stream). */
  async send(
    method: ChannelMethod,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<ChannelResponse> {
    const now = (this.o.nowMs ?? Date.now)();
    const inner = {
      v: 1,
      ts: now,
      auth: await this.#session(now),
      method,
      path,
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    };
    const { message, opener } = encapsulateRequest(this.o.pubkey, utf8(JSON.stringify(inner)));
    const res = await this.o.relay(message, CHANNEL_REQUEST_TYPE, signal);
    if (!res.ok || !res.body) {
      const text = await res.text().catch(() => '');
      throw new AttestationError('CHANNEL', `the relay answered ${res.status} ${text.slice(0, 300)}`.trim());
    }
    const reader = res.body.getReader();
    const pending: Uint8Array[] = [];
    const next = async (): Promise<Uint8Array | undefined> => {
      while (pending.length === 0) {
        const r = await reader.read();
        if (r.done) {
          opener.end();
          return undefined;
        }
        pending.push(...opener.feed(r.value));
      }
      return pending.shift();
    };
    const first = await next();
    if (!first) throw new AttestationError('CHANNEL', 'the response has no head');
    const head = JSON.parse(new TextDecoder().decode(first)) as ChannelResponseHead;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      try {
        for (;;) {
          const c = await next();
          if (c === undefined) return;
          if (c.length > 0) yield c;
        }
      } finally {
        reader.releaseLock();
      }
    }
    return { status: head.status, type: head.type, body: chunks() };
  }

  /** A JSON request: the whole body read and parsed. */
  async json(
    method: ChannelMethod,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: unknown }> {
    const r = await this.send(method, path, body);
    const parts: Uint8Array[] = [];
    for await (const c of r.body) parts.push(c);
    const text = new TextDecoder().decode(concatBytes(...parts));
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = text;
    }
    return { status: r.status, json };
  }
}
