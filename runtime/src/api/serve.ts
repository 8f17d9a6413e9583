// serveOperatorApi: binds the API to a port with @hono/node-server and returns a closable server.
// HTTP upgrade requests (WebSocket) go through the same app — every middleware, session and owner
// check — with the socket in the env, so the port proxy can take it over (routes/port-proxy.ts);
// anything else that answers an upgrade gets its response written on the socket, which then closes.
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { serve } from '@hono/node-server';
import type { OperatorApi } from './app.ts';
import type { UpgradeEnv } from './routes/port-proxy.ts';

type FetchApp = Pick<OperatorApi, 'fetch'>;

const PORT_PATH = /^\/api\/(?:sandboxes\/[^/]+|sandbox)\/port\//;
// The SSH tunnel (routes/ssh.ts): a WebSocket the route itself accepts after every check.
const SSH_TUNNEL_PATH = /^\/api\/(?:sandboxes\/[^/]+|sandbox)\/ssh\/tunnel(?:\?|$)/;
// A preview host's name (`p<port>-<sandbox id>.…`): the app decides whether it is one of ours
// (previews/preview-host.ts) and proxies the upgrade only with a valid preview grant.
const PREVIEW_HOST = /^p[1-9]\d{0,4}-[a-z0-9][a-z0-9-]{0,56}\./i;

async function readCapped(res: Response, max: number, ms: number): Promise<Buffer> {
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const timer = setTimeout(() => void reader.cancel().catch(() => {}), ms);
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } catch {
    // cancelled by the timer: send what came
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, max);
}

async function onUpgrade(
  app: FetchApp,
  incoming: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  const headers = new Headers();
  for (let i = 0; i < incoming.rawHeaders.length; i += 2) {
    headers.append(incoming.rawHeaders[i]!, incoming.rawHeaders[i + 1]!);
  }
  const upgrade: UpgradeEnv = { socket, head };
  socket.on('error', () => socket.destroy());
  let res: Response;
  if (
    !PORT_PATH.test(incoming.url ?? '/') &&
    !SSH_TUNNEL_PATH.test(incoming.url ?? '/') &&
    !PREVIEW_HOST.test(incoming.headers.host ?? '')
  ) {
    res = Response.json(
      {
        error: {
          code: 'VALIDATION',
          message:
            'only the port proxy (…/port/{port}/…), the SSH tunnel (…/ssh/tunnel) and preview hosts accept protocol upgrades',
        },
      },
      { status: 400 },
    );
  } else {
    try {
      const request = new Request(`http://localhost${incoming.url ?? '/'}`, {
        method: incoming.method ?? 'GET',
        headers,
      });
      res = await app.fetch(request, { incoming, outgoing: undefined, upgrade });
    } catch {
      res = new Response(null, { status: 400 });
    }
  }
  if (upgrade.taken) return;
  // An app may answer an upgrade with a stream that never ends: send at most 64 KiB of it, for 5 s.
  const body = await readCapped(res, 64 * 1024, 5_000);
  const lines = [`HTTP/1.1 ${res.status} ${res.statusText || 'Upgrade Refused'}`];
  for (const [k, v] of res.headers)
    if (k !== 'content-length' && k !== 'transfer-encoding') lines.push(`${k}: ${v}`);
  lines.push(`content-length: ${body.length}`, 'connection: close');
  socket.end(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), body]));
}

export interface OperatorApiServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function serveOperatorApi(
  app: Pick<OperatorApi, 'fetch'> & Partial<Pick<OperatorApi, 'dispose'>>,
  opts: { port?: number; host?: string } = {},
): Promise<OperatorApiServer> {
  const host = opts.host ?? '127.0.0.1';
  let closeUpgraded = () => {};
  return new Promise((resolve, reject) => {
    const server = serve(
      { fetch: app.fetch, port: opts.port ?? 9090, hostname: host },
      (info: AddressInfo) => {
        const h = info.address.includes(':') ? `[${info.address}]` : info.address;
        resolve({
          url: `http://${h}:${info.port}`,
          port: info.port,
          close: () =>
            new Promise<void>((done) => {
              app.dispose?.();
              closeUpgraded();
              // SSE streams would hold close() open forever; end them.
              (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
              server.close(() => done());
            }),
        });
      },
    );
    server.once('error', reject);
    // Upgraded sockets leave the server's connection tracking: close() ends them itself.
    const upgraded = new Set<Duplex>();
    (server as Server).on('upgrade', (incoming: IncomingMessage, socket: Duplex, head: Buffer) => {
      upgraded.add(socket);
      socket.once('close', () => upgraded.delete(socket));
      void onUpgrade(app, incoming, socket, head);
    });
    closeUpgraded = () => {
      for (const s of upgraded) s.destroy();
    };
  });
}
