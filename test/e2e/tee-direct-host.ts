// The host of a `direct` TEE operator, as an attacker: it cannot change the measured operator
// program, but it carries every byte between the owner and the operator API (so it holds the
// owner's API session token and every relay message) and can answer in the operator's place.
// `HostRelay` is that network: an HTTP proxy in front of the operator API that records every
// request body and can refuse the owner channel (a downgrade attempt).
import { createServer, request, type Server } from 'node:http';

export interface HostRelay {
  url: string;
  /** Every request the relay carried: method, path, body (as latin1), in order. */
  requests: Array<{ method: string; path: string; body: string }>;
  /** Every byte it carried, both ways. */
  bytes(): string;
  /** While true, `POST …/tee/channel` is answered 409 here (the operator never sees it). */
  refuseChannel: boolean;
  close(): Promise<void>;
}

export async function startHostRelay(target: string): Promise<HostRelay> {
  const t = new URL(target);
  const seen: Buffer[] = [];
  const relay: HostRelay = {
    url: '',
    requests: [],
    bytes: () => Buffer.concat(seen).toString('latin1'),
    refuseChannel: false,
    close: () => new Promise((r) => srv.close(() => r())),
  };
  const srv: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push(body);
      relay.requests.push({ method: req.method ?? '', path: req.url ?? '', body: body.toString('latin1') });
      if (relay.refuseChannel && req.method === 'POST' && /\/tee\/channel$/.test(req.url ?? '')) {
        res.writeHead(409, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ success: false, error: { code: 'CONFLICT', message: 'no owner channel here' } }),
        );
        return;
      }
      const up = request(
        { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.on('data', (c: Buffer) => {
            seen.push(c);
            res.write(c);
          });
          answer.on('end', () => res.end());
        },
      );
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      up.end(body);
    });
  });
  srv.keepAliveTimeout = 1;
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  relay.url = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
  const close = relay.close;
  relay.close = () => {
    srv.closeAllConnections();
    return close();
  };
  return relay;
}
