// Test support: a TCP relay in front of an HTTP server that keeps every byte it carries, both
// ways — what an operator (or anyone on its network path) sees of a connection.
import { connect, createServer, type Socket } from 'node:net';

export interface Wiretap {
  /** http://127.0.0.1:PORT, forwarding to the target. */
  url: string;
  /** Every byte relayed so far, both directions, in arrival order. */
  bytes(): Buffer;
  close(): Promise<void>;
}

export async function startWiretap(targetUrl: string): Promise<Wiretap> {
  const target = new URL(targetUrl);
  const seen: Buffer[] = [];
  const open = new Set<Socket>();
  const srv = createServer((client) => {
    const up = connect(Number(target.port), target.hostname);
    for (const s of [client, up]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => {
        client.destroy();
        up.destroy();
      });
    }
    client.on('data', (c: Buffer) => {
      seen.push(c);
      up.write(c);
    });
    up.on('data', (c: Buffer) => {
      seen.push(c);
      client.write(c);
    });
    client.on('end', () => up.end());
    up.on('end', () => client.end());
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}${target.pathname === '/' ? '' : target.pathname}`,
    bytes: () => Buffer.concat(seen),
    close: () =>
      new Promise<void>((r) => {
        for (const s of open) s.destroy();
        srv.close(() => r());
      }),
  };
}
