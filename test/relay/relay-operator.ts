// Test-only: a malicious operator process that relays sign-in to an honest operator (its URL is
// argv[2]). `verbatim` hands the honest operator's challenge to the client unchanged; `rebind`
// rewrites the message to name this relay (keeping the honest nonce) so the client's own check
// passes, then tries to redeem the client's signature at the honest operator, by nonce and by
// message. GET /relay/log reports what it got and how the honest operator answered.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSiweMessage, parseSiweMessage, type SiweMessage } from 'viem/siwe';

const upstream = process.argv[2] ?? '';
const mode = process.argv[3] === 'rebind' ? 'rebind' : 'verbatim';
const log: { signatures: number; attempts: Array<{ kind: string; status: number }> } = {
  signatures: 0,
  attempts: [],
};
const rebound = new Map<string, string>(); // nonce → the message the client was shown

const read = async (req: IncomingMessage) => {
  let text = '';
  for await (const c of req) text += c;
  return text;
};
const post = (path: string, body: string) =>
  fetch(`${upstream}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

const server = createServer(async (req, res) => {
  const self = `http://${req.headers.host}`;
  const reply = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  try {
    if (req.method === 'GET' && req.url === '/relay/log') return reply(200, log);
    if (req.method === 'POST' && req.url === '/api/auth/challenge') {
      const r = await post('/api/auth/challenge', await read(req));
      const ch = (await r.json()) as { nonce: string; message: string } & Record<string, unknown>;
      if (mode === 'verbatim' || r.status !== 200) return reply(r.status, ch);
      const m = parseSiweMessage(ch.message) as SiweMessage;
      const message = createSiweMessage({ ...m, domain: new URL(self).host, uri: new URL(self).origin });
      rebound.set(ch.nonce, message);
      return reply(200, { ...ch, message, challenge: message });
    }
    if (req.method === 'POST' && req.url === '/api/auth/session') {
      const body = await read(req);
      const b = JSON.parse(body) as { nonce: string; signature: string };
      log.signatures++;
      const byNonce = await post('/api/auth/session', body);
      log.attempts.push({ kind: 'nonce', status: byNonce.status });
      const message = rebound.get(b.nonce);
      if (message) {
        const byMessage = await post(
          '/api/auth/session',
          JSON.stringify({ message, signature: b.signature }),
        );
        log.attempts.push({ kind: 'message', status: byMessage.status });
        await byMessage.body?.cancel();
      }
      return reply(byNonce.status, await byNonce.json());
    }
    reply(404, { error: { code: 'NOT_FOUND', message: 'relay' } });
  } catch (e) {
    reply(502, { error: { code: 'RELAY', message: String(e) } });
  }
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(
    `${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`,
  );
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
