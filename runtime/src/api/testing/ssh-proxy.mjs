// Test support: an ssh ProxyCommand that opens the operator's SSH tunnel (a WebSocket) with the
// session in SSH_TEST_TOKEN and carries stdin/stdout over it — what `agent-sandbox ssh connect`
// does, without the CLI. Usage: node ssh-proxy.mjs <tunnel ws:// url>. Exit 3 when refused.
import { createWebSocketStream, WebSocket } from 'ws';

const ws = new WebSocket(process.argv[2], {
  headers: { authorization: `Bearer ${process.env.SSH_TEST_TOKEN}` },
});
ws.on('unexpected-response', (_req, res) => {
  let body = '';
  res.on('data', (d) => (body += d));
  res.on('end', () => {
    process.stderr.write(`tunnel refused: ${res.statusCode} ${body}\n`);
    process.exit(3);
  });
});
ws.on('error', (e) => {
  process.stderr.write(`tunnel error: ${e.message}\n`);
  process.exit(3);
});
ws.on('open', () => {
  const s = createWebSocketStream(ws);
  s.pipe(process.stdout);
  process.stdin.pipe(s);
  // The operator ending the tunnel (a revoked key, sign-out) ends this proxy, and so ssh: the
  // stream's own 'close' waits for stdin too, which ssh keeps open.
  ws.on('close', () => process.exit(0));
  s.on('error', () => process.exit(0));
});
