// The owner channel's enclave end on the `direct` backend, where the TEE side is this operator
// program inside the confidential VM (the measured code). The host, the network and the relay in
// front of the operator API are the adversary: they see the owner's API session token, so owner
// operations are taken only from here. A request is opened with the sandbox's attested key,
// checked for freshness, replay and the owner's own EIP-4361 signature against the owner the
// binding context names (attestation/src/channel-owner.ts), then run: a sealed body is opened in
// this process and goes to the sandbox's secret path; anything else goes to the sandbox's sidecar
// (inside the CVM) with this process's sidecar token. The answer streams back as sealed chunks;
// any failure after opening is answered sealed too, so the relay learns only "200".
import { request } from 'node:http';
import type { ChannelEndpoint, ResponseSealer } from '@agent-sandbox/attestation/sealing';
import { CHANNEL_RESPONSE_TYPE, encodeHead, MAX_CHUNK } from '@agent-sandbox/attestation/sealing';
import { RuntimeError } from '../errors.ts';

export interface SidecarTarget {
  url: string;
  token: string;
  socketPath?: string;
}

export interface DirectChannelOptions {
  endpoint: ChannelEndpoint;
  /** The sandbox's sidecar, reached from inside the CVM (throws when the sandbox is not running). */
  sidecar(): Promise<SidecarTarget> | SidecarTarget;
  /** Opens a sealed body here and hands the values to the sandbox's secret path. */
  sealed(body: unknown): Promise<{ success: boolean; secrets_count: number }>;
  log?: (fields: Record<string, unknown>, msg: string) => void;
}

const utf8 = (s: string) => new TextEncoder().encode(s);
const errorJson = (code: string, message: string) =>
  utf8(JSON.stringify({ success: false, error: { code, message } }));

export function directChannel(o: DirectChannelOptions, message: Uint8Array): Response {
  let opened: ReturnType<ChannelEndpoint['decapsulate']>;
  try {
    opened = o.endpoint.decapsulate(message);
  } catch {
    throw new RuntimeError('VALIDATION', 'the channel request does not open with this enclave key');
  }
  const sealer: ResponseSealer = opened.sealer;
  let hangUp: (() => void) | undefined;
  let ctrl!: ReadableStreamDefaultController<Uint8Array>;
  let done = false;
  let headSent = false;
  const push = (plain: Uint8Array, final = false) => {
    if (done) return;
    ctrl.enqueue(sealer.chunk(plain, final));
    if (final) {
      done = true;
      ctrl.close();
    }
  };
  const answer = (status: number, type: string, body: Uint8Array) => {
    if (headSent) {
      // Mid-stream: cut it (the owner's opener sees no final chunk and says so).
      if (!done) ctrl.error(new Error('the sandbox hung up'));
      done = true;
      return;
    }
    headSent = true;
    push(encodeHead({ status, type }));
    push(body, true);
  };
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      ctrl = c;
      c.enqueue(sealer.head);
    },
    // The owner stopped reading (a terminal or agent-run stream hung up): stop the inner request.
    cancel() {
      done = true;
      hangUp?.();
    },
  });
  const run = async () => {
    let inner: Awaited<ReturnType<ChannelEndpoint['accept']>>;
    try {
      inner = await o.endpoint.accept(opened);
    } catch (e) {
      const code = (e as { code?: string }).code;
      o.log?.({ code }, 'owner channel request refused');
      const owner = code === 'OWNER';
      answer(
        owner ? 403 : 400,
        'application/json',
        errorJson(owner ? 'FORBIDDEN' : 'CHANNEL', (e as Error).message),
      );
      return;
    }
    if (inner.path === '/tee/sealed-secrets') {
      let r: { success: boolean; secrets_count: number };
      try {
        r =
          inner.method === 'POST'
            ? await o.sealed(JSON.parse(inner.body ?? 'null'))
            : { success: false, secrets_count: 0 };
      } catch {
        r = { success: false, secrets_count: 0 };
      }
      answer(200, 'application/json', utf8(JSON.stringify(r)));
      return;
    }
    const target = await o.sidecar();
    const payload = inner.body === undefined ? undefined : Buffer.from(inner.body, 'utf8');
    const url = new URL(target.url);
    const up = request(
      {
        ...(target.socketPath
          ? { socketPath: target.socketPath }
          : { host: url.hostname, port: url.port || 80 }),
        method: inner.method,
        path: inner.path,
        headers: {
          authorization: `Bearer ${target.token}`,
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
        },
      },
      (res) => {
        headSent = true;
        push(encodeHead({ status: res.statusCode ?? 502, type: String(res.headers['content-type'] ?? '') }));
        res.on('data', (c: Buffer) => {
          for (let i = 0; i < c.length; i += MAX_CHUNK) push(c.subarray(i, i + MAX_CHUNK));
        });
        res.on('end', () => push(new Uint8Array(0), true));
        res.on('error', () => answer(502, '', new Uint8Array(0)));
      },
    );
    hangUp = () => up.destroy();
    up.on('error', (err) => {
      answer(
        502,
        'application/json',
        errorJson('INTERNAL', `the enclave could not run the request: ${err.message}`),
      );
    });
    up.end(payload);
  };
  run().catch((e: unknown) => {
    const code = e instanceof RuntimeError ? e.code : 'INTERNAL';
    const status = e instanceof RuntimeError ? e.status : 500;
    answer(status, 'application/json', errorJson(code, (e as Error).message));
  });
  return new Response(body, {
    status: 200,
    headers: { 'content-type': CHANNEL_RESPONSE_TYPE, 'cache-control': 'no-store' },
  });
}
