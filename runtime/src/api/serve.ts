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
  try {
    const request = new Request(`http://localhost${incoming.url ?? '/'}`, {
      method: incoming.method ?? 'GET',
      headers,
    });
    res = await app.fetch(request, { incoming, outgoing: undefined, upgrade });
  } catch {
    res = new Response(null, { status: 400 });
  }
  if (upgrade.taken) return;
  const body = Buffer.from(await res.arrayBuffer());
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
