// POST /tee/channel: the owner's end-to-end channel into this enclave (SIDECAR_TEE=dstack). The
// operator relays the bytes and holds nothing that opens them: the request is encapsulated to the
// attested key (attestation/src/channel.ts), signed inside by the owner the context names, fresh
// and not replayed; only then is it run here, against this sidecar's own routes over loopback with
// the owner credential that never leaves this process, and its response streamed back as sealed
// chunks. Any failure after opening is answered encrypted too (the relay learns only "200").
import { Agent, request } from 'node:http';
import {
  CHANNEL_RESPONSE_TYPE,
  type ChannelEndpoint,
  encodeHead,
  MAX_CHUNK,
  type ResponseSealer,
} from '@agent-sandbox/attestation/sealing';
import type { SidecarConfig } from '../config.ts';
import { errorBody, SidecarError } from '../errors.ts';
import { type Handler, type Reply, STREAMED } from '../http/http-router.ts';

function readRaw(req: import('node:http').IncomingMessage, limit: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new SidecarError('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`, 413));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('error', reject);
    req.on('end', () => resolve(new Uint8Array(Buffer.concat(chunks))));
  });
}

const text = (s: string) => new TextEncoder().encode(s);

export function teeChannelHandler(
  endpoint: ChannelEndpoint,
  ownerToken: string,
  config: SidecarConfig,
): Handler {
  // The inner hop reuses its loopback connections (Node 18, the image's, opens one per request
  // without an agent that keeps them): a TCP connect and accept per owner call saved. Idle ones
  // close after 5 s, well inside the server's keepAliveTimeout (65 s), so none is reused as the
  // server drops it.
  const loopback = new Agent({ keepAlive: true, timeout: 5_000 });
  return async (ctx): Promise<Reply> => {
    const raw = await readRaw(ctx.req, config.maxBodyBytes);
    let opened: ReturnType<ChannelEndpoint['decapsulate']>;
    try {
      opened = endpoint.decapsulate(raw);
    } catch {
      throw new SidecarError(
        'INVALID_REQUEST',
        'the channel request does not open with this enclave key',
        400,
      );
    }
    const { res } = ctx;
    const sealer: ResponseSealer = opened.sealer;
    res.writeHead(200, { 'content-type': CHANNEL_RESPONSE_TYPE, 'cache-control': 'no-store' });
    // Small sealed frames, corked until the turn ends: the nonce, the head and a short body leave
    // in one write (one syscall, one TCP segment) instead of one each (bench/tee-channel.bench.ts).
    let corked = false;
    const send = (frame: Uint8Array, end = false) => {
      if (!corked) {
        corked = true;
        res.cork();
        process.nextTick(() => {
          corked = false;
          res.uncork();
        });
      }
      if (end) res.end(frame);
      else res.write(frame);
    };
    send(sealer.head);
    const fail = (status: number, code: string, message: string) => {
      send(sealer.chunk(encodeHead({ status, type: 'application/json' })));
      send(sealer.chunk(text(JSON.stringify(errorBody(code, message))), true), true);
    };
    let inner: Awaited<ReturnType<ChannelEndpoint['accept']>>;
    try {
      inner = await endpoint.accept(opened);
    } catch (e) {
      const code = (e as { code?: string }).code;
      ctx.log.warn({ code }, 'owner channel request refused');
      fail(code === 'OWNER' ? 403 : 400, code === 'OWNER' ? 'FORBIDDEN' : 'CHANNEL', (e as Error).message);
      return STREAMED;
    }
    const body = inner.body === undefined ? undefined : Buffer.from(inner.body, 'utf8');
    const target = config.socketPath
      ? { socketPath: config.socketPath }
      : { host: ctx.req.socket.localAddress, port: ctx.req.socket.localPort };
    const up = request(
      {
        ...target,
        agent: loopback,
        method: inner.method,
        path: inner.path,
        headers: {
          authorization: `Bearer ${ownerToken}`,
          'x-request-id': ctx.requestId,
          ...(body ? { 'content-type': 'application/json', 'content-length': body.length } : {}),
        },
      },
      (answer) => {
        send(
          sealer.chunk(
            encodeHead({
              status: answer.statusCode ?? 502,
              type: String(answer.headers['content-type'] ?? ''),
            }),
          ),
        );
        answer.on('data', (c: Buffer) => {
          for (let i = 0; i < c.length; i += MAX_CHUNK) send(sealer.chunk(c.subarray(i, i + MAX_CHUNK)));
        });
        answer.on('end', () => send(sealer.chunk(new Uint8Array(0), true), true));
        answer.on('error', () => res.destroy());
      },
    );
    // The relay hung up (a stream the owner stopped reading): stop the inner request too.
    res.on('close', () => up.destroy());
    up.on('error', (err) => {
      if (!res.writableEnded) fail(502, 'INTERNAL', `the enclave could not run the request: ${err.message}`);
    });
    up.end(body);
    return STREAMED;
  };
}
