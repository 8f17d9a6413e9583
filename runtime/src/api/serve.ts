// serveOperatorApi: binds the API to a port with @hono/node-server and returns a closable server.
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { OperatorApi } from './app.ts';

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
              // SSE streams would hold close() open forever; end them.
              (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
              server.close(() => done());
            }),
        });
      },
    );
    server.once('error', reject);
  });
}
