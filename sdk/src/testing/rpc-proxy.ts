// Test fixture: a loopback JSON-RPC proxy in front of a real node whose answers a test rewrites per
// request, to act as a hostile, lagging or clamping RPC (wire format unchanged: single or batch).
import { createServer, type IncomingMessage, type Server } from 'node:http';

export interface RpcRequest {
  id?: unknown;
  jsonrpc?: string;
  method: string;
  params?: unknown[];
}

/** A JSON-RPC response body without its id (the proxy adds it back). */
export interface RpcAnswer {
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** Decides one request's answer; `forward` asks the real node (possibly with changed params). */
export type RpcRewrite = (
  req: RpcRequest,
  forward: (r: RpcRequest) => Promise<RpcAnswer>,
) => Promise<RpcAnswer>;

export interface RpcProxy {
  url: string;
  /** Replaces the rewrite (the default forwards everything unchanged). */
  rewrite: RpcRewrite;
  /** Requests seen so far, by method. */
  calls: Map<string, number>;
  close(): Promise<void>;
}

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let s = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      s += c;
    });
    req.on('end', () => resolve(s));
    req.on('error', reject);
  });

export async function rpcProxy(upstream: string): Promise<RpcProxy> {
  const forward = async (r: RpcRequest): Promise<RpcAnswer> => {
    const res = await fetch(upstream, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: r.method, params: r.params ?? [] }),
    });
    const body = (await res.json()) as RpcAnswer;
    return body.error ? { error: body.error } : { result: body.result };
  };
  const proxy: RpcProxy = {
    url: '',
    rewrite: (r, f) => f(r),
    calls: new Map(),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  const one = async (r: RpcRequest) => {
    proxy.calls.set(r.method, (proxy.calls.get(r.method) ?? 0) + 1);
    const a = await proxy.rewrite(r, forward);
    return { jsonrpc: '2.0', id: r.id ?? null, ...a };
  };
  const server: Server = createServer(async (req, res) => {
    try {
      const body = JSON.parse(await read(req)) as RpcRequest | RpcRequest[];
      const out = Array.isArray(body) ? await Promise.all(body.map(one)) : await one(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    } catch (e) {
      res.writeHead(502).end(String(e));
    }
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  proxy.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return proxy;
}
